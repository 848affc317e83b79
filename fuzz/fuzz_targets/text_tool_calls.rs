//! An answer's text through the reader of tool calls written as text (the tools offered
//! are the daemon's own, every integration configured), then the finding's parser.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sre_agent::agent::Finding;
use sre_agent::llm::extract_text_calls;

fn offered() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let config = sre_agent_fuzz::config();
        let _rt = sre_agent_fuzz::runtime().enter();
        sre_agent::agent::build_tools(
            config,
            &sre_agent_fuzz::upstreams(config),
            sre_agent_fuzz::metrics(),
        )
        .expect("the tools build")
        .names()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(found) = extract_text_calls(text, offered()) {
        for (name, arguments) in &found.calls {
            assert!(offered().contains(&name.as_str()), "not offered: {name}");
            // Unreadable arguments stay text, for the agent to tell the model (`tool_arguments`).
            assert!(
                arguments.is_object() || arguments.is_string(),
                "arguments of {name}: {arguments}"
            );
        }
    }
    let _ = Finding::parse(text);
});
