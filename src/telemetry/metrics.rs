//! Every metric family of sre-agent, registered once in one registry. Known label values
//! are pre-initialised to zero so dashboards and alert rules see series before traffic:
//! here the ones this layer knows; the values that are a domain type's variants (triggers,
//! statuses, outcomes, channels, …) by `app::metrics` from those types, through
//! [`Metrics::init_series`].

use prometheus::core::{MetricVec, MetricVecBuilder};
use prometheus::{
    CounterVec, Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

/// The `endpoint` label of a request no route matched.
pub const OTHER_ENDPOINT: &str = "other";

super::labelled! {
    /// The background work that runs under `telemetry::supervise`: the `task` label of
    /// `sre_agent_panics_total`.
    pub enum Task {
        Investigation => "investigation",
        InvestigationWorker => "investigation_worker",
        HealthChecker => "health_checker",
        Notifier => "notifier",
        Retention => "retention",
        HttpAccept => "http_accept",
        HttpConnection => "http_connection",
        HttpHandler => "http_handler",
        AlertIntake => "alert_intake",
        AlertSubmissions => "alert_submissions",
        Schedule => "schedule",
    }
}

super::labelled! {
    /// How a call ended: the `status` label of the LLM, tool and MCP server call counters.
    pub enum CallStatus {
        Ok => "ok",
        Error => "error",
    }
}

impl CallStatus {
    /// The status of a call that succeeded when `ok`.
    pub fn of(ok: bool) -> Self {
        if ok { Self::Ok } else { Self::Error }
    }
}

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
const SLOW_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// The metric families, shared as `Arc<Metrics>`.
pub struct Metrics {
    registry: Registry,
    pub http_request_duration: HistogramVec,
    pub http_requests: IntCounterVec,
    pub http_in_progress: IntGaugeVec,
    pub tool_call_duration: HistogramVec,
    pub tool_calls: IntCounterVec,
    pub llm_calls: IntCounterVec,
    pub llm_call_duration: Histogram,
    pub llm_tokens: IntCounterVec,
    pub llm_cost_dollars: CounterVec,
    pub component_healthy: IntGaugeVec,
    pub build_info: IntGaugeVec,
    pub investigations: IntCounterVec,
    pub investigation_duration: Histogram,
    pub alerts_received: IntCounterVec,
    pub alerts_capped: IntCounterVec,
    pub queue_depth: IntGauge,
    pub alert_backlog: IntGauge,
    pub alert_group_cache_bytes: IntGauge,
    pub alert_group_cache_evictions: IntCounter,
    pub budget_rejections: IntCounterVec,
    pub budget_today_dollars: Gauge,
    pub budget_today_investigations: IntGauge,
    pub reports: IntCounterVec,
    pub report_duration: Histogram,
    pub report_collector_duration: HistogramVec,
    pub report_collector_runs: IntCounterVec,
    pub last_report_timestamp: Gauge,
    pub notifications: IntCounterVec,
    pub feedback: IntCounterVec,
    pub start_time: Gauge,
    pub panics: IntCounterVec,
    pub mcp_server_calls: IntCounterVec,
    pub mcp_server_call_duration: HistogramVec,
    pub mcp_client_restarts: IntCounterVec,
}

fn opts(name: &str, help: &str) -> Opts {
    Opts::new(format!("sre_agent_{name}"), help)
}

fn hopts(name: &str, help: &str, buckets: &[f64]) -> HistogramOpts {
    HistogramOpts::new(format!("sre_agent_{name}"), help).buckets(buckets.to_vec())
}

impl Metrics {
    /// Builds and registers every family. `model` goes into `sre_agent_build_info`.
    pub fn new(model: &str) -> Self {
        let m = Self::build(model).expect("metric families are valid and registered once");
        m.init_known_labels(model);
        m
    }

    fn build(_model: &str) -> prometheus::Result<Self> {
        let registry = Registry::new();
        macro_rules! reg {
            ($e:expr) => {{
                let c = $e;
                registry.register(Box::new(c.clone()))?;
                c
            }};
        }
        Ok(Self {
            http_request_duration: reg!(HistogramVec::new(
                hopts(
                    "http_request_duration_seconds",
                    "HTTP request latency by route template.",
                    LATENCY_BUCKETS
                ),
                &["endpoint"]
            )?),
            http_requests: reg!(IntCounterVec::new(
                opts(
                    "http_requests_total",
                    "HTTP requests by route template and status code."
                ),
                &["endpoint", "status"]
            )?),
            http_in_progress: reg!(IntGaugeVec::new(
                opts("http_requests_in_progress", "HTTP requests being served."),
                &["endpoint"]
            )?),
            tool_call_duration: reg!(HistogramVec::new(
                hopts(
                    "tool_call_duration_seconds",
                    "Agent tool call latency.",
                    LATENCY_BUCKETS
                ),
                &["tool"]
            )?),
            tool_calls: reg!(IntCounterVec::new(
                opts(
                    "tool_calls_total",
                    "Agent tool calls by tool and status (ok, error)."
                ),
                &["tool", "status"]
            )?),
            llm_calls: reg!(IntCounterVec::new(
                opts("llm_calls_total", "LLM API calls by status (ok, error)."),
                &["status"]
            )?),
            llm_call_duration: reg!(Histogram::with_opts(hopts(
                "llm_call_duration_seconds",
                "LLM API call latency, retries included.",
                SLOW_BUCKETS
            ))?),
            llm_tokens: reg!(IntCounterVec::new(
                opts(
                    "llm_tokens_total",
                    "LLM tokens by type (prompt, completion, cached)."
                ),
                &["type"]
            )?),
            llm_cost_dollars: reg!(CounterVec::new(
                opts(
                    "llm_estimated_cost_dollars_total",
                    "Estimated LLM cost in US dollars by model."
                ),
                &["model"]
            )?),
            component_healthy: reg!(IntGaugeVec::new(
                opts(
                    "component_healthy",
                    "1 when a component answered its last health check."
                ),
                &["component"]
            )?),
            build_info: reg!(IntGaugeVec::new(
                opts("build_info", "Build information; always 1."),
                &["version", "model"]
            )?),
            investigations: reg!(IntCounterVec::new(
                opts(
                    "investigations_total",
                    "Finished investigations by trigger and final status."
                ),
                &["trigger", "status"]
            )?),
            investigation_duration: reg!(Histogram::with_opts(hopts(
                "investigation_duration_seconds",
                "Wall time of an investigation from start to finding.",
                SLOW_BUCKETS
            ))?),
            alerts_received: reg!(IntCounterVec::new(
                opts(
                    "alerts_received_total",
                    "Alerts received by source and outcome."
                ),
                &["source", "outcome"]
            )?),
            alerts_capped: reg!(IntCounterVec::new(
                opts(
                    "alerts_capped_total",
                    "Alerts received with labels or annotations cut to the intake's bounds."
                ),
                &["source"]
            )?),
            queue_depth: reg!(IntGauge::with_opts(opts(
                "queue_depth",
                "Investigations waiting in the durable queue."
            ))?),
            alert_backlog: reg!(IntGauge::with_opts(opts(
                "alert_backlog",
                "Webhook batches stored in the alert inbox and not yet decided."
            ))?),
            alert_group_cache_bytes: reg!(IntGauge::with_opts(opts(
                "alert_group_cache_bytes",
                "Estimated bytes of decoded alert groups held in memory (bounded by store.cache_mib)."
            ))?),
            alert_group_cache_evictions: reg!(IntCounter::with_opts(opts(
                "alert_group_cache_evictions_total",
                "Alert groups evicted from the in-memory cache to make room (read back from disk when needed)."
            ))?),
            budget_rejections: reg!(IntCounterVec::new(
                opts(
                    "budget_rejections_total",
                    "Work refused by a daily budget, by budget (count, cost) and trigger."
                ),
                &["budget", "trigger"]
            )?),
            budget_today_dollars: reg!(Gauge::with_opts(opts(
                "budget_today_dollars",
                "Estimated LLM dollars spent plus reserved by running work today (UTC)."
            ))?),
            budget_today_investigations: reg!(IntGauge::with_opts(opts(
                "budget_today_investigations",
                "Investigations counted against alerts.max_investigations_per_day today (UTC)."
            ))?),
            reports: reg!(IntCounterVec::new(
                opts("reports_total", "Weekly reports by trigger and status."),
                &["trigger", "status"]
            )?),
            report_duration: reg!(Histogram::with_opts(hopts(
                "report_duration_seconds",
                "Wall time to build a report.",
                SLOW_BUCKETS
            ))?),
            report_collector_duration: reg!(HistogramVec::new(
                hopts(
                    "report_collector_duration_seconds",
                    "Report collector wall time.",
                    SLOW_BUCKETS
                ),
                &["collector"]
            )?),
            report_collector_runs: reg!(IntCounterVec::new(
                opts(
                    "report_collector_runs_total",
                    "Report collector runs by status (ok, error, timeout)."
                ),
                &["collector", "status"]
            )?),
            last_report_timestamp: reg!(Gauge::with_opts(opts(
                "last_report_timestamp_seconds",
                "Unix time of the last report sent; 0 when none was sent yet."
            ))?),
            notifications: reg!(IntCounterVec::new(
                opts(
                    "notifications_total",
                    "Deliveries by channel (email, webhook, report, grafana) and status."
                ),
                &["channel", "status"]
            )?),
            feedback: reg!(IntCounterVec::new(
                opts(
                    "feedback_total",
                    "Verdicts people gave on findings (right, wrong), each submission counted."
                ),
                &["verdict"]
            )?),
            start_time: reg!(Gauge::with_opts(opts(
                "start_time_seconds",
                "Unix time the daemon started."
            ))?),
            panics: reg!(IntCounterVec::new(
                opts(
                    "panics_total",
                    "Panics caught by task; the daemon kept serving (a loop task restarted)."
                ),
                &["task"]
            )?),
            mcp_server_calls: reg!(IntCounterVec::new(
                opts(
                    "mcp_server_calls_total",
                    "Calls to sre-agent's MCP server by transport (stdio, http), tool (or resources/read) and status (ok, error)."
                ),
                &["via", "tool", "status"]
            )?),
            mcp_server_call_duration: reg!(HistogramVec::new(
                hopts(
                    "mcp_server_call_duration_seconds",
                    "Latency of calls to sre-agent's MCP server by transport.",
                    SLOW_BUCKETS
                ),
                &["via"]
            )?),
            mcp_client_restarts: reg!(IntCounterVec::new(
                opts(
                    "mcp_client_restarts_total",
                    "Restarts of a configured MCP server ([[mcp.servers]]) after it ended or failed."
                ),
                &["server"]
            )?),
            registry,
        })
    }

    fn init_known_labels(&self, model: &str) {
        self.init_endpoint(OTHER_ENDPOINT);
        self.http_requests.with_label_values(&["/healthz", "200"]);
        for s in CallStatus::ALL {
            self.llm_calls.with_label_values(&[s.label()]);
        }
        self.llm_cost_dollars.with_label_values(&[model]);
        for t in Task::ALL {
            self.panics.with_label_values(&[t.label()]);
        }
        // Always registered, so the tool families are exported before any tool is configured.
        self.init_tool("current_time");
        self.build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION"), model])
            .set(1);
        self.component_healthy.with_label_values(&["store"]).set(1);
        self.start_time.set(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
        );
    }

    /// Pre-initialises the series of one tool so its rates exist before its first call.
    pub fn init_tool(&self, tool: &str) {
        self.tool_call_duration.with_label_values(&[tool]);
        for s in CallStatus::ALL {
            self.tool_calls.with_label_values(&[tool, s.label()]);
        }
    }

    /// Pre-initialises the series of one HTTP route (its template, as the router has it).
    pub fn init_endpoint(&self, endpoint: &str) {
        self.http_request_duration.with_label_values(&[endpoint]);
        self.http_in_progress.with_label_values(&[endpoint]);
    }

    /// Pre-initialises every series of `family` whose labels take `values` (one list a
    /// label, in the family's label order), at 0, so its rates exist before the first
    /// event. The lists come from the types whose values the labels are (`Labelled`).
    pub fn init_series<T: MetricVecBuilder>(family: &MetricVec<T>, values: &[&[&str]]) {
        let mut series: Vec<Vec<&str>> = vec![Vec::new()];
        for label in values {
            series = series
                .iter()
                .flat_map(|s| label.iter().map(move |v| [s.as_slice(), &[*v]].concat()))
                .collect();
        }
        for s in series {
            family.with_label_values(&s);
        }
    }

    /// Pre-initialises the series of sre-agent's MCP server over `via` (stdio, http) for
    /// each of `tools` it offers, so its rates exist before the first call.
    pub fn init_mcp_server<'a>(&self, via: &str, tools: impl IntoIterator<Item = &'a str>) {
        self.mcp_server_call_duration.with_label_values(&[via]);
        for tool in tools {
            for s in CallStatus::ALL {
                self.mcp_server_calls
                    .with_label_values(&[via, tool, s.label()]);
            }
        }
    }

    /// Pre-initialises the restarts of one configured MCP server (`[[mcp.servers]]`).
    pub fn init_mcp_client(&self, server: &str) {
        self.mcp_client_restarts.with_label_values(&[server]);
    }

    /// The text exposition format 0.0.4.
    pub fn encode(&self) -> String {
        let mut buf = Vec::with_capacity(16 * 1024);
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding into a Vec cannot fail");
        String::from_utf8(buf).expect("exposition is UTF-8")
    }
}
