//! A stdio server's process: the environment it starts with, and its end. It gets only
//! `PATH`, `HOME`, locale and the like from the daemon's environment (which holds the
//! `SRE_AGENT_*` secrets), then its own `env`; when it exits the connection ends, and at a
//! stop it is killed.

use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;

/// What the daemon's own environment passes on to a server's process: only what programs
/// need to run (`SRE_AGENT_*` variables hold the daemon's secrets), then the server's `env`.
const INHERITED_ENV: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "SHELL", "TERM",
];

/// The environment of a server's process, from the daemon's `parent` environment.
pub(super) fn env(
    parent: impl Iterator<Item = (String, String)>,
    cfg: &McpServerConfig,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = parent
        .filter(|(k, _)| INHERITED_ENV.contains(&k.as_str()))
        .collect();
    env.extend(
        cfg.env
            .iter()
            .map(|(k, v)| (k.clone(), v.expose().to_string())),
    );
    env
}

/// Waits for the child process to exit, and ends the connection when it does; kills it at
/// `stop`.
pub(super) async fn reap(
    mut child: tokio::process::Child,
    end: rmcp::service::RunningServiceCancellationToken,
    stop: CancellationToken,
) {
    tokio::select! {
        _ = child.wait() => end.cancel(),
        _ = stop.cancelled() => {
            let _ = child.kill().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_process_gets_path_and_its_own_env_but_none_of_the_daemons_secrets() {
        let cfg: McpServerConfig = toml::from_str(
            "name = \"t\"\ncommand = \"x\"\nenv = { API_KEY = \"k\" }\ntools = [\"a\"]",
        )
        .unwrap();
        let parent = [
            ("PATH", "/usr/bin"),
            ("SRE_AGENT_LLM__API_KEY", "sk-secret"),
            ("SRE_AGENT_SERVER__API_TOKEN", "t0ken"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let env = env(parent.into_iter(), &cfg);
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["PATH", "HOME", "API_KEY"]);
        assert!(
            !env.iter()
                .any(|(_, v)| v.contains("secret") || v == "t0ken")
        );
    }
}
