//! A Grafana webhook body (version 1) through the intake's parser, then what the intake
//! and the evidence plan read from each alert (fingerprint, group key, generator URL's
//! expression, caps).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sre_agent::alerts::AlertSource;

fuzz_target!(|data: &[u8]| {
    sre_agent_fuzz::read_webhook(AlertSource::Grafana, data);
});
