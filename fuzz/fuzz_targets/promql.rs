//! A rule expression (a rule file, Grafana, a webhook's `generatorURL`) through the
//! agent's PromQL helpers and the tools' selector lexer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(expr) = std::str::from_utf8(data) else {
        return;
    };
    sre_agent_fuzz::read_rule_expression(expr);
    let url = format!(
        "http://prometheus:9090/graph?g0.expr={}&g0.tab=1",
        expr.bytes()
            .map(|b| format!("%{b:02X}"))
            .collect::<String>()
    );
    let _ = sre_agent_fuzz::rule_promql::expr_from_generator_url(expr);
    assert_eq!(
        sre_agent_fuzz::rule_promql::expr_from_generator_url(&url).as_deref(),
        Some(expr.trim()).filter(|e| !e.is_empty()),
    );
});
