//! Text through the Prometheus text exposition parser (the eval worlds' exporter
//! captures).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (samples, _types) = sre_agent::eval::background::parse(text);
    for s in samples {
        assert!(s.value.is_finite(), "a non-finite sample kept: {s:?}");
    }
});
