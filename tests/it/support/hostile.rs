//! Hostile upstreams for the trust tests: a server that answers every request with an
//! endless (200 MiB) body and counts the bytes it managed to hand to the socket, and one
//! that redirects to another origin.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Size of the body the flood server offers.
pub const FLOOD_BYTES: usize = 200 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;

/// Answers every request with `status` and a 200 MiB body, produced lazily.
pub struct Flood {
    pub url: String,
    sent: Arc<AtomicUsize>,
    handle: tokio::task::JoinHandle<()>,
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl Flood {
    pub async fn start(status: u16, content_type: &'static str) -> Flood {
        let sent = Arc::new(AtomicUsize::new(0));
        let state = (sent.clone(), status, content_type);
        let app = Router::new().fallback(flood).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let handle = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Flood { url, sent, handle }
    }

    /// Bytes of body produced so far (what the client's reading pulled through).
    pub fn sent(&self) -> usize {
        self.sent.load(Ordering::SeqCst)
    }
}

async fn flood(
    State((sent, status, content_type)): State<(Arc<AtomicUsize>, u16, &'static str)>,
) -> Response {
    // A JSON-looking start, so a reader that reads everything would go on reading.
    let stream = futures::stream::iter(0..FLOOD_BYTES / CHUNK).map(move |i| {
        sent.fetch_add(CHUNK, Ordering::SeqCst);
        let mut chunk = vec![b' '; CHUNK];
        if i == 0 {
            chunk[0] = b'[';
        }
        Ok::<_, std::io::Error>(chunk)
    });
    (
        StatusCode::from_u16(status).unwrap(),
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_LENGTH, &FLOOD_BYTES.to_string()),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

use futures::StreamExt as _;

/// Redirects every request to `target` + the same path.
pub async fn redirector(target: String) -> (String, tokio::task::JoinHandle<()>) {
    let app = Router::new().fallback(move |uri: axum::http::Uri| {
        let to = format!("{target}{}", uri.path());
        async move { (StatusCode::FOUND, [(header::LOCATION, to)]).into_response() }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, handle)
}
