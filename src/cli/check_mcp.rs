//! The `[[mcp.servers]]` part of `check-config`: each server is started once and asked for
//! its tools; one line per server says which allowed tools it lists, which it does not, or
//! why it could not be started or listed (naming the server). A failing server is a
//! warning, not an error: the daemon starts without it and keeps restarting it.

use crate::config::Config;

/// The lines for every configured MCP server (nothing when none is configured).
pub fn report(config: &Config) -> String {
    if config.mcp.servers.is_empty() {
        return String::new();
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return format!("\n# mcp.servers: not checked (no async runtime: {e})\n"),
    };
    let probes = runtime.block_on(crate::tools::mcp::probe(config));
    let mut out =
        String::from("\n# MCP servers ([[mcp.servers]]), each started and asked for its tools:\n");
    for p in probes {
        match p.result {
            Ok((listed, missing)) => {
                out.push_str(&format!("# mcp server {:?}: ok; tools offered: {}\n", p.name, names(&listed)));
                if !missing.is_empty() {
                    out.push_str(&format!(
                        "# warning: mcp server {:?} does not list these allowed tools: {}\n",
                        p.name,
                        names(&missing)
                    ));
                }
            }
            Err(e) => out.push_str(&format!(
                "# warning: mcp server {:?} cannot be used: {e} (the daemon starts without it and retries)\n",
                p.name
            )),
        }
    }
    out
}

fn names(list: &[String]) -> String {
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}
