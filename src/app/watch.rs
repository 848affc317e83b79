//! Per-connection deadlines for the accept loop (`listener.rs`): a connection that is
//! reading a request head (a new one from its accept, a kept-alive one from the first
//! byte of its next request) has `server.header_timeout` to finish it; one idle between
//! requests has [`IDLE_TIMEOUT`]; one serving a request (its handler running or its answer
//! streaming) has none here (`server.request_timeout` bounds the handler).
//!
//! Why not hyper's `header_read_timeout`: it also closes a kept-alive connection idle for
//! that long, and a client reusing its pooled connection at that moment has written its
//! request into a connection the server is closing: the request fails ("connection closed
//! before message completed"), and a POST is not retried. A busy CPU widens the window,
//! as the client's pool learns late that the connection closed. An idle timeout longer
//! than the clients' own (90 s in Go's and reqwest's pools) lets the client close first.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a kept-alive connection may wait for its next request.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Reading a request head since then.
    Head(Instant),
    /// Serving a request.
    Busy,
    /// Between requests since then.
    Idle(Instant),
}

/// What a connection is doing, shared by its stream, its service and its watchdog.
pub struct Watch {
    phase: Mutex<Phase>,
    changed: Notify,
    header_timeout: Duration,
}

impl Watch {
    /// A connection accepted now: it is to send its first request head.
    pub fn new(header_timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            phase: Mutex::new(Phase::Head(Instant::now())),
            changed: Notify::new(),
            header_timeout,
        })
    }

    fn set(&self, next: impl FnOnce(Phase) -> Option<Phase>) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = next(*phase) {
            *phase = p;
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// Bytes came in: from idle, a request head has started.
    pub fn read(&self) {
        self.set(|p| matches!(p, Phase::Idle(_)).then(|| Phase::Head(Instant::now())));
    }

    /// A request head is complete: its handler runs.
    pub fn busy(&self) {
        self.set(|p| (p != Phase::Busy).then_some(Phase::Busy));
    }

    /// The answer is written (or dropped): waiting for the next request.
    pub fn idle(&self) {
        self.set(|p| (p == Phase::Busy).then(|| Phase::Idle(Instant::now())));
    }

    fn deadline(&self) -> Option<Instant> {
        match *self.phase.lock().unwrap_or_else(|e| e.into_inner()) {
            Phase::Head(since) => since.checked_add(self.header_timeout),
            Phase::Idle(since) => since.checked_add(IDLE_TIMEOUT),
            Phase::Busy => None,
        }
    }

    /// Returns once the connection has overrun its current deadline.
    pub async fn overrun(&self) {
        loop {
            let changed = self.changed.notified();
            match self.deadline() {
                Some(at) if at <= Instant::now() => return,
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

/// A response body that tells the connection's [`Watch`] when it is done.
pub struct Watched<B> {
    inner: B,
    watch: Arc<Watch>,
}

impl<B> Watched<B> {
    pub fn new(inner: B, watch: Arc<Watch>) -> Self {
        Self { inner, watch }
    }
}

impl<B> Drop for Watched<B> {
    fn drop(&mut self) {
        self.watch.idle();
    }
}

impl<B: Body + Unpin> Body for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.watch.idle();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The connection's stream, telling its [`Watch`] when bytes come in.
pub struct Reading<S> {
    inner: S,
    watch: Arc<Watch>,
}

impl<S> Reading<S> {
    pub fn new(inner: S, watch: Arc<Watch>) -> Self {
        Self { inner, watch }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Reading<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.watch.read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Reading<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::Router;
    use axum::routing::post;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio_util::sync::CancellationToken;

    use crate::app::listener::{ConnectionLimits, serve_with};
    use crate::telemetry::Metrics;

    const REQUEST: &[u8] =
        b"POST /webhook HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}";

    /// Reads one answer (its body is `ok`); `None` when the server closed the connection.
    async fn answer(s: &mut TcpStream) -> Option<String> {
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.ends_with(b"ok") {
            let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
                .await
                .expect("an answer or a close")
                .unwrap_or(0);
            if n == 0 {
                return None;
            }
            got.extend_from_slice(&buf[..n]);
        }
        Some(String::from_utf8_lossy(&got).into_owned())
    }

    /// Whether the server closes `s` within `within`.
    async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
        let mut buf = [0u8; 64];
        matches!(
            tokio::time::timeout(within, s.read(&mut buf)).await,
            Ok(Ok(0) | Err(_))
        )
    }

    #[tokio::test]
    async fn a_kept_alive_connection_idle_past_the_header_timeout_takes_the_next_request_and_a_stalled_head_is_cut_off()
     {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route("/webhook", post(|| async { "ok" }));
        let limits = ConnectionLimits {
            max_connections: 8,
            header_timeout: Duration::from_millis(300),
        };
        let token = CancellationToken::new();
        let server = tokio::spawn(serve_with(
            listener,
            router,
            limits,
            Arc::new(Metrics::new("m")),
            token.clone(),
            Arc::new(|_| {}),
        ));

        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(REQUEST).await.unwrap();
        assert!(answer(&mut s).await.unwrap().starts_with("HTTP/1.1 200"));
        // A client's pool reuses the connection after more than the header timeout.
        tokio::time::sleep(Duration::from_millis(900)).await;
        s.write_all(REQUEST).await.unwrap();
        let again = answer(&mut s).await;
        assert!(
            again
                .as_deref()
                .is_some_and(|a| a.starts_with("HTTP/1.1 200")),
            "the idle connection was closed under the client: {again:?}"
        );
        // A head started on it and never finished is cut off after the header timeout.
        s.write_all(b"POST /webhook HTTP/1.1\r\n").await.unwrap();
        assert!(closed_within(&mut s, Duration::from_secs(3)).await);
        // So is a new connection that sends nothing.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        assert!(closed_within(&mut silent, Duration::from_secs(3)).await);

        token.cancel();
        server.await.unwrap();
    }
}
