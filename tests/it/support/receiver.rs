//! A local webhook receiver (axum) that records every POST: path, headers and body.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};

/// One received POST.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

/// The running receiver; stops when dropped.
pub struct Receiver {
    pub base: String,
    got: Arc<Mutex<Vec<Received>>>,
    handle: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl Receiver {
    pub async fn start() -> Receiver {
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let app = Router::new().fallback(record).with_state(got.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let handle = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver { base, got, handle }
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    pub fn at(&self, path: &str) -> Option<Received> {
        self.received().into_iter().find(|r| r.path == path)
    }
}

async fn record(
    State(got): State<Arc<Mutex<Vec<Received>>>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    got.lock().unwrap().push(Received {
        path: uri.path().to_string(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    StatusCode::OK
}
