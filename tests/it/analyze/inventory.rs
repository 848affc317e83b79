//! `inventory` on captured real exporter output (node_exporter and process-exporter on two
//! hosts, one of them down now): the jobs with their targets up and hosts, and the metric
//! families the exporters emit, largest first — what a question about unmeasured things
//! needs to be answered "there is no data for it". One sweep reads the metric names once,
//! however many analyzers use them.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use sre_agent::analyze::{FactClass, Scope, Severity, Sweep};
use sre_agent::config::UpstreamConfig;
use sre_agent::eval::fakes::FakeServer;
use sre_agent::integrations::PrometheusClient;

use super::world::{World, calm, lines, node_host, series};

#[tokio::test]
async fn the_inventory_lists_jobs_with_targets_up_and_hosts_and_the_exporters_metric_families() {
    let mut defs = Vec::new();
    for h in ["elm-1", "elm-2"] {
        let mut host = node_host(h);
        calm(&mut host, h);
        defs.extend(host);
        defs.push(series(
            "up",
            &[("instance", &format!("{h}:9256")), ("job", "process")],
            |_| Some(1.0),
        ));
    }
    defs.push(series(
        "up",
        &[("instance", "elm-1:9100"), ("job", "node")],
        |_| Some(1.0),
    ));
    // elm-2's node_exporter stopped answering ten minutes ago.
    defs.push(series(
        "up",
        &[("instance", "elm-2:9100"), ("job", "node")],
        |ago| Some(if ago < 600 { 0.0 } else { 1.0 }),
    ));
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(600)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let inv: Vec<_> = facts.iter().filter(|f| f.analyzer == "inventory").collect();
    assert_eq!(inv.len(), 1, "{all}");
    let f = inv[0];
    assert_eq!((f.class, f.severity), (FactClass::Context, Severity::Info));
    assert_eq!(f.what, "4 scrape targets in 2 jobs, 3 up", "{all}");
    assert_eq!(f.source.tool, "prometheus_targets");
    let detail = f.detail.as_deref().unwrap_or_default();
    assert!(
        detail.starts_with("jobs: node 1 of 2 up (elm-1, elm-2), process 2 of 2 up (elm-1, elm-2); metric families: node ("),
        "{detail}"
    );
    // process-exporter's families are there too, and nothing the exporters do not emit.
    for family in ["namedprocess (", "go (", "process ("] {
        assert!(detail.contains(family), "{family} in {detail}");
    }
    assert!(!detail.contains("ups"), "{detail}");
}

#[tokio::test]
async fn one_sweep_reads_the_metric_names_from_prometheus_once() {
    let mut defs = node_host("elm-1");
    calm(&mut defs, "elm-1");
    defs.push(series(
        "up",
        &[("instance", "elm-1:9100"), ("job", "node")],
        |_| Some(1.0),
    ));
    let Some(world) = World::build(&defs, 7200, 15).await else {
        return;
    };
    let proxy = CountingProxy::start(&world.prometheus.url).await;
    let config = UpstreamConfig {
        url: Some(proxy.url.parse().unwrap()),
        ..Default::default()
    };
    let client = Arc::new(PrometheusClient::new(&config).unwrap());
    let sweep = Sweep::of(sre_agent::analyze::prom::analyzers(client));
    let report = sweep.run(Scope::new(Utc::now(), None)).await;
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    // Both readers of the names ran and saw them.
    let inv = report.facts.iter().find(|f| f.analyzer == "inventory");
    let detail = inv.and_then(|f| f.detail.as_deref()).unwrap_or_default();
    assert!(detail.contains("metric families: node ("), "{detail}");
    assert_eq!(
        proxy.count("/api/v1/label/__name__/values"),
        1,
        "{:?}",
        proxy.paths()
    );
    // The next sweep reads them again: they are the names of its own window.
    sweep.run(Scope::new(Utc::now(), None)).await;
    assert_eq!(
        proxy.count("/api/v1/label/__name__/values"),
        2,
        "{:?}",
        proxy.paths()
    );
}

/// Forwards every request to a real Prometheus and keeps the path of each.
struct CountingProxy {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
    _server: FakeServer,
}

impl CountingProxy {
    async fn start(target: &str) -> Self {
        #[derive(Clone)]
        struct Forward {
            target: String,
            client: reqwest::Client,
            seen: Arc<Mutex<Vec<String>>>,
        }
        async fn forward(State(f): State<Forward>, req: Request) -> Response {
            f.seen.lock().unwrap().push(req.uri().path().to_string());
            let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
            let mut upstream = f
                .client
                .request(req.method().clone(), format!("{}{path}", f.target));
            if let Some(t) = req.headers().get(header::CONTENT_TYPE) {
                upstream = upstream.header(header::CONTENT_TYPE, t);
            }
            let body = axum::body::to_bytes(req.into_body(), usize::MAX)
                .await
                .unwrap();
            let answer = upstream.body(body).send().await.unwrap();
            let status = answer.status();
            let kind = answer.headers().get(header::CONTENT_TYPE).cloned();
            let bytes = answer.bytes().await.unwrap();
            let mut response = (status, bytes).into_response();
            if let Some(k) = kind {
                response.headers_mut().insert(header::CONTENT_TYPE, k);
            }
            response
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let state = Forward {
            target: target.trim_end_matches('/').to_string(),
            client: reqwest::Client::new(),
            seen: seen.clone(),
        };
        let server = FakeServer::start(Router::new().fallback(forward).with_state(state))
            .await
            .unwrap();
        Self {
            url: server.url.clone(),
            seen,
            _server: server,
        }
    }

    fn paths(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    fn count(&self, path: &str) -> usize {
        self.paths().iter().filter(|p| *p == path).count()
    }
}
