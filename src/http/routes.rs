//! `Routes`: an axum router that keeps the path template of every route added to it, so
//! the request metrics (`request_metrics.rs`) are pre-initialised for exactly the routes
//! the daemon serves, with no list to keep by hand.

use std::convert::Infallible;

use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, Route};
use tower::{Layer, Service};

use crate::app::AppState;

/// A router and the path templates of its routes.
#[derive(Default)]
pub struct Routes {
    router: Router<AppState>,
    paths: Vec<&'static str>,
}

impl Routes {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `path` (see `Router::route`).
    pub fn route(mut self, path: &'static str, method_router: MethodRouter<AppState>) -> Self {
        // Called as a function: tests/it/trust/openapi.rs reads every `.route("…"` call.
        self.router = Router::route(self.router, path, method_router);
        self.paths.push(path);
        self
    }

    /// Serves `service` at `path` and below it (see `Router::nest_service`).
    pub fn nest_service<S>(mut self, path: &'static str, service: S) -> Self
    where
        S: Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
        S::Response: IntoResponse,
        S::Future: Send + 'static,
    {
        self.router = self.router.nest_service(path, service);
        self.paths.push(path);
        self
    }

    /// Adds every route of `other` (see `Router::merge`).
    pub fn merge(mut self, other: Routes) -> Self {
        self.router = self.router.merge(other.router);
        self.paths.extend(other.paths);
        self
    }

    /// Wraps the routes added so far in `layer` (see `Router::layer`).
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.router = self.router.layer(layer);
        self
    }

    /// Wraps the routes added so far in `layer`, run only when one matches (see
    /// `Router::route_layer`).
    pub fn route_layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.router = self.router.route_layer(layer);
        self
    }

    /// The router and the path template of each of its routes.
    pub fn into_parts(self) -> (Router<AppState>, Vec<&'static str>) {
        (self.router, self.paths)
    }
}
