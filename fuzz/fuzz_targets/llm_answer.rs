//! An answer of the LLM endpoint through the daemon's own client (HTTP, status,
//! `Retry-After`, the response parser, tool-name repair, calls written as text), with the
//! daemon's tools offered, then the finding's parser on its text.
//!
//! Input: a first line `STATUS [RETRY-AFTER]`, then the body.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sre_agent::agent::Finding;
use sre_agent::llm::{ChatMessage, LlmClient};
use sre_agent::tools::ToolDefinition;
use sre_agent_fuzz::{Answer, config, fake, header_and_body, metrics, runtime, status, upstreams};

struct Setup {
    client: LlmClient,
    tools: Vec<ToolDefinition>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let config = config();
        let _rt = runtime().enter();
        let tools = sre_agent::agent::build_tools(config, &upstreams(config), metrics())
            .expect("the tools build")
            .definitions();
        let client = LlmClient::new(&config.llm, metrics())
            .expect("the LLM client builds")
            .expect("llm.base_url is set");
        Setup { client, tools }
    })
}

fuzz_target!(|data: &[u8]| {
    let setup = setup();
    let (head, body) = header_and_body(data);
    let (code, retry_after) = head.trim().split_once(' ').unwrap_or((head.trim(), ""));
    let mut answer = Answer {
        status: status(code),
        body,
        ..Answer::default()
    };
    if !retry_after.trim().is_empty() {
        answer
            .headers
            .push(("Retry-After".into(), retry_after.trim().into()));
    }
    fake().set(answer);
    let messages = [
        ChatMessage::System("You are an SRE.".into()),
        ChatMessage::User("Why is the disk full?".into()),
    ];
    let tools: &[ToolDefinition] = if data.len() % 2 == 0 {
        &setup.tools
    } else {
        &[]
    };
    if let Ok(response) = runtime().block_on(setup.client.chat(&messages, tools)) {
        for call in &response.tool_calls {
            assert!(!call.name.trim().is_empty(), "a tool call without a name");
        }
        if let Some(content) = &response.content {
            let _ = Finding::parse(content);
        }
    }
});
