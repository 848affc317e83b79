//! An upstream's answer through one health-sweep analyzer (Prometheus exporters,
//! Loki, Kubernetes, Proxmox VE, PBS, TrueNAS): every request it makes is answered with
//! the input, and its facts are ranked as the agent ranks them.
//!
//! Input: a first line `ANALYZER STATUS`, then the body. Seeds: `fuzz/seeds/analyzers/`.
#![no_main]

use std::sync::{Arc, OnceLock};

use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use sre_agent::analyze::{self, Analyzer, Scope};
use sre_agent::integrations::Upstreams;
use sre_agent_fuzz::{Answer, config, fake, header_and_body, runtime, status};

fn analyzers() -> &'static [Arc<dyn Analyzer>] {
    static ALL: OnceLock<Vec<Arc<dyn Analyzer>>> = OnceLock::new();
    ALL.get_or_init(|| {
        let c = config();
        let _rt = runtime().enter();
        let u = Upstreams::from_config(c).expect("the clients build");
        let mut all = Vec::new();
        all.extend(analyze::prom::analyzers(
            u.prometheus.clone().expect("Prometheus client"),
        ));
        all.extend(analyze::logs::analyzers(
            u.loki.clone().expect("Loki client"),
        ));
        all.extend(analyze::kube::analyzers(
            u.kubernetes.clone().expect("Kubernetes client"),
        ));
        all.extend(analyze::proxmox::analyzers(
            u.proxmox.clone().expect("Proxmox client"),
        ));
        all.extend(analyze::pbs::analyzers(
            u.pbs.clone().expect("PBS client"),
            c.pbs.backup_interval.get(),
        ));
        all.extend(analyze::truenas::analyzers(
            u.truenas.clone().expect("TrueNAS client"),
        ));
        all
    })
}

fuzz_target!(|data: &[u8]| {
    let (head, body) = header_and_body(data);
    let (name, code) = head.trim().split_once(' ').unwrap_or((head.trim(), ""));
    let Some(analyzer) = analyzers().iter().find(|a| a.name() == name) else {
        return;
    };
    fake().set(Answer {
        status: status(code),
        body,
        ..Answer::default()
    });
    // A fixed clock: an input means the same at every run.
    let now = Utc.timestamp_opt(1_780_000_000, 0).unwrap();
    let scope = Scope::new(now, Some(now - chrono::TimeDelta::minutes(30)));
    if let Ok(facts) = runtime().block_on(analyzer.run(&scope)) {
        let focus = analyze::Focus::question("why is the disk of node1 full");
        let _ = analyze::rank(facts, &focus);
    }
});
