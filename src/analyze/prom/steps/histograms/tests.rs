use super::*;

/// The samples of an exposition (`name{k="v",…} value` lines; label values without
/// commas or escaped quotes, as the captures have) on `instance`, and its declared types.
fn exposition(text: &str, instance: &str) -> (Vec<Sample>, HashMap<String, String>) {
    let (mut samples, mut types) = (Vec::new(), HashMap::new());
    for line in text.lines() {
        if let Some(t) = line.strip_prefix("# TYPE ") {
            let mut w = t.split_whitespace();
            if let (Some(n), Some(k)) = (w.next(), w.next()) {
                types.insert(n.to_string(), k.to_string());
            }
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (name, labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        let mut metric: Labels = labels
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .collect();
        metric.insert("__name__".into(), name.to_string());
        metric.insert("instance".into(), instance.to_string());
        let value = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or(f64::NAN),
        };
        samples.push(Sample {
            metric,
            value,
            ts: 0.0,
        });
    }
    (samples, types)
}

fn capture(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/exporters")
        .join(file);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn prometheus_http_histograms_are_found_by_declaration_or_by_le_and_summaries_are_not() {
    let (samples, types) = exposition(&capture("prometheus_http.prom"), "mon-1:9090");
    let declared: HashSet<&str> = samples
        .iter()
        .filter_map(|s| family(&s.metric, &types))
        .collect();
    let undeclared: HashSet<&str> = samples
        .iter()
        .filter_map(|s| family(&s.metric, &HashMap::new()))
        .collect();
    assert!(declared.contains("prometheus_http_request_duration_seconds"));
    assert!(declared.contains("prometheus_http_response_size_bytes"));
    assert_eq!(
        declared, undeclared,
        "the `le` label tells them without metadata"
    );
    // A summary's quantiles, a counter named like a histogram's count, are no histogram.
    assert!(!declared.contains("go_gc_duration_seconds"));
    assert!(!declared.iter().any(|f| f.ends_with("_total")));
    let families: HashSet<String> = declared.iter().map(|f| f.to_string()).collect();
    assert!(part(
        "prometheus_http_request_duration_seconds_bucket",
        &families
    ));
    assert!(part(
        "prometheus_http_request_duration_seconds_sum",
        &families
    ));
    assert!(!part(
        "prometheus_http_request_duration_seconds_count",
        &families
    ));
    assert!(!part("go_gc_duration_seconds_sum", &families));
}

#[test]
fn the_quantile_interpolates_within_its_bucket_as_prometheus_does() {
    let inf = f64::INFINITY;
    // 100 observations: 90 at most 0.1, 99 at most 0.2, all at most 0.4.
    let b = [(0.1, 90.0), (0.2, 99.0), (0.4, 100.0), (inf, 100.0)];
    assert!((quantile(0.5, &b) - 0.1 * 50.0 / 90.0).abs() < 1e-12);
    assert!((quantile(0.99, &b) - 0.2).abs() < 1e-12);
    assert!((quantile(0.995, &b) - 0.3).abs() < 1e-9);
    // In +Inf: the highest finite bound; without observations or +Inf: none.
    assert_eq!(quantile(0.99, &[(1.0, 0.0), (inf, 10.0)]), 1.0);
    assert!(quantile(0.99, &[(1.0, 0.0), (inf, 0.0)]).is_nan());
    assert!(quantile(0.99, &[(1.0, 5.0), (2.0, 5.0)]).is_nan());
    // Counts read out of order are made monotonic.
    assert!((quantile(0.5, &[(1.0, 10.0), (2.0, 9.0), (inf, 10.0)]) - 0.5).abs() < 1e-12);
}

#[test]
fn a_captured_histogram_whose_observations_moved_to_slower_buckets_reads_as_its_p99() {
    // Two real scrapes of Prometheus' /metrics 15 s apart: the query handler's 30
    // requests in between were all within 0.1 s.
    let (first, types) = exposition(&capture("prometheus_http.prom"), "mon-1:9090");
    let (second, _) = exposition(&capture("prometheus_http.after15s.prom"), "mon-1:9090");
    let families: HashSet<String> = first
        .iter()
        .filter_map(|s| family(&s.metric, &types))
        .map(str::to_string)
        .collect();
    // The same handler later: 40 more requests, each between 1 s and 3 s (a bucket of
    // the capture's own bounds), the sum up by 80 s.
    let slow: Vec<Sample> = second
        .iter()
        .map(|s| {
            let mut s = s.clone();
            let name = s.metric.get("__name__").cloned().unwrap_or_default();
            let handler = s.metric.get("handler").map(String::as_str);
            if name.starts_with("prometheus_http_request_duration_seconds")
                && handler == Some("/api/v1/query")
            {
                let le = s.metric.get("le").and_then(|l| bound(l));
                s.value += match (name.rsplit('_').next(), le) {
                    (Some("bucket"), Some(le)) if le >= 3.0 => 40.0,
                    (Some("sum"), _) => 80.0,
                    (Some("count"), _) => 40.0,
                    _ => 0.0,
                };
            }
            s
        })
        .collect();
    let at = [second.clone(), second.clone(), second.clone(), slow];
    let before = [first.clone(), first.clone(), first.clone(), second];
    let read = fold(&at, &before, &families);
    let query = read
        .iter()
        .find(|r| {
            r.labels.get("__name__").map(String::as_str)
                == Some("prometheus_http_request_duration_seconds")
                && r.labels.get("handler").map(String::as_str) == Some("/api/v1/query")
        })
        .expect("the query handler's histogram");
    assert!(!query.labels.contains_key("le"));
    // 0.099 s (all in the first bucket, interpolated from 0) before; in (1, 3] after.
    for k in 0..3 {
        assert!(
            (query.quantile[k] - 0.099).abs() < 1e-9,
            "{:?}",
            query.quantile
        );
    }
    assert!(
        query.quantile[3] > 2.9 && query.quantile[3] <= 3.0,
        "{:?}",
        query.quantile
    );
    assert!(query.mean[0] < 0.01, "{:?}", query.mean);
    assert!((query.mean[3] - 2.0).abs() < 0.01, "{:?}", query.mean);
    // A handler nothing was observed on has no quantile.
    assert!(
        read.iter()
            .all(|r| r.quantile.iter().any(|v| v.is_finite()))
    );
    assert_eq!(
        expr(&query.labels),
        "histogram_quantile(0.99, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket{handler=\"/api/v1/query\",instance=\"mon-1:9090\"}[5m])))"
    );
}

#[test]
fn a_restart_between_the_two_reads_counts_from_zero() {
    let then = Read {
        buckets: [(Bound(1.0), 500.0), (Bound(f64::INFINITY), 510.0)].into(),
        sum: Some(300.0),
    };
    let now = Read {
        buckets: [(Bound(1.0), 2.0), (Bound(f64::INFINITY), 12.0)].into(),
        sum: Some(40.0),
    };
    let seen = observed(&then, &now);
    assert_eq!(seen.buckets.get(&Bound(1.0)), Some(&2.0));
    assert_eq!(seen.sum, Some(40.0));
    let later = Read {
        buckets: [(Bound(1.0), 510.0), (Bound(f64::INFINITY), 530.0)].into(),
        sum: Some(310.0),
    };
    let seen = observed(&then, &later);
    assert_eq!(seen.buckets.get(&Bound(f64::INFINITY)), Some(&20.0));
    assert_eq!(seen.sum, Some(10.0));
}
