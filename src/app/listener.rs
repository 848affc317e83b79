//! The accept loop, with the limits `axum::serve` lacks: at most `server.max_connections`
//! connections at once (past it, new ones wait in the kernel's backlog), and a connection
//! that does not send a complete request head within `server.header_timeout` (a new one
//! from its accept, a kept-alive one from the first byte of its next request) is closed,
//! so trickling clients cannot pile up; a kept-alive one idle for `watch::IDLE_TIMEOUT`
//! is closed too (`watch.rs`).
//! On shutdown every connection finishes its in-flight request and closes. Each request
//! carries its client's address (`ConnectInfo<SocketAddr>`), for the login throttle. The
//! accept loop runs under `telemetry::supervise`: after a panic it starts again.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::watch::{Reading, Watch, Watched};
use crate::telemetry::supervise::{contained, restarting};
use crate::telemetry::{Metrics, Task};

/// What one client may hold.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

/// Called with each accepted client's address before its connection starts (tests use it
/// to make the accept loop panic).
pub type OnAccept = Arc<dyn Fn(SocketAddr) + Send + Sync>;

/// Serves `router` on `listener` until `token` is cancelled, then drains the connections;
/// `on_accept` sees each accepted client first. The accept loop runs under
/// `telemetry::supervise::restarting`: a panic in it is logged, counted in
/// `sre_agent_panics_total{task="http_accept"}`, and the loop starts again on the same
/// listener (the connection being accepted is lost; the others keep being served).
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    metrics: Arc<Metrics>,
    token: CancellationToken,
    on_accept: OnAccept,
) {
    let acceptor = Arc::new(Acceptor {
        listener,
        router,
        limits,
        metrics: metrics.clone(),
        permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        connections: TaskTracker::new(),
        on_accept,
    });
    restarting(Task::HttpAccept, metrics, token.clone(), || {
        acceptor.clone().accept(token.clone())
    })
    .await;
    acceptor.connections.close();
    acceptor.connections.wait().await;
}

/// What the accept loop keeps across its restarts.
struct Acceptor {
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    metrics: Arc<Metrics>,
    permits: Arc<Semaphore>,
    connections: TaskTracker,
    on_accept: OnAccept,
}

impl Acceptor {
    /// Accepts connections until `token` is cancelled, each on a task of its own.
    async fn accept(self: Arc<Self>, token: CancellationToken) {
        let limits = self.limits;
        loop {
            let permit = tokio::select! {
                _ = token.cancelled() => break,
                p = self.permits.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let (stream, peer) = tokio::select! {
                _ = token.cancelled() => break,
                accepted = self.listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!(error = %e, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            (self.on_accept)(peer);
            let _ = stream.set_nodelay(true);
            let watch = Watch::new(limits.header_timeout);
            let service = WithPeer {
                inner: TowerToHyperService::new(self.router.clone()),
                peer,
                watch: watch.clone(),
            };
            let token = token.clone();
            let metrics = self.metrics.clone();
            // Handler panics answer 500 (`panics.rs`); anything else ends this connection only.
            let connection = async move {
                // hyper's own header timeout would also close idle kept-alive connections
                // (`watch.rs` says why not); the watch bounds both.
                let conn = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(None)
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(Reading::new(stream, watch.clone())), service)
                    .with_upgrades();
                tokio::pin!(conn);
                tokio::select! {
                    _ = conn.as_mut() => {}
                    // Past its deadline the connection is dropped (closed) as it stands.
                    () = watch.overrun() => {}
                    _ = token.cancelled() => {
                        conn.as_mut().graceful_shutdown();
                        let _ = conn.await;
                    }
                }
                drop(permit);
            };
            self.connections.spawn(async move {
                contained(Task::HttpConnection, &metrics, connection).await;
            });
        }
    }
}

/// A connection's service: puts the client's address in each request's extensions, and
/// tells the connection's watch when a request starts and when its answer is done.
#[derive(Clone)]
struct WithPeer<S> {
    inner: S,
    peer: SocketAddr,
    watch: Arc<Watch>,
}

impl<S, B> hyper::service::Service<Request<B>> for WithPeer<S>
where
    S: hyper::service::Service<Request<B>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Watched<Body>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn call(&self, mut req: Request<B>) -> Self::Future {
        req.extensions_mut().insert(ConnectInfo(self.peer));
        self.watch.busy();
        let watch = self.watch.clone();
        let answer = self.inner.call(req);
        Box::pin(async move { Ok(answer.await?.map(|body| Watched::new(body, watch))) })
    }
}
