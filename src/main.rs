//! The sre-agent command line: parse, load config, init tracing, run.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

mod report_cmd;

use clap::{Parser, Subcommand};
use sre_agent::config::{Config, ConfigSource};
use sre_agent::{App, agent, telemetry, tools};
use tokio_util::sync::CancellationToken;

/// Exit code for an unusable configuration.
const EXIT_CONFIG: u8 = 2;

#[derive(Parser)]
#[command(
    name = "sre-agent",
    version,
    about = "Alert investigations, weekly reliability reports and self-instrumentation for homelabs"
)]
struct Cli {
    /// Configuration file (default: ./config.toml when it exists, else built-in defaults).
    #[arg(long, global = true, env = "SRE_AGENT_CONFIG", value_name = "PATH")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon.
    Serve,
    /// Validate the configuration and print it with secrets as ***.
    CheckConfig,
    /// Exit 0 when the running daemon's /healthz answers (for container health checks).
    Healthcheck {
        /// Base URL of the daemon (default: http://<server.listen>).
        #[arg(long)]
        url: Option<String>,
        /// How long to wait for an answer.
        #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
        timeout: Duration,
    },
    /// Ask a question: runs an investigation (via the daemon when it runs, else
    /// in-process), prints progress to stderr and the finding as markdown to stdout.
    Ask {
        question: String,
        /// Print the investigation with its timeline as JSON instead of markdown.
        #[arg(long)]
        json: bool,
    },
    /// List or show stored investigations.
    Investigations {
        #[command(subcommand)]
        command: InvestigationsCommand,
    },
    /// Generate a weekly report now and print it (works without a running daemon; when a
    /// daemon holds the store, asks its API instead).
    Report {
        /// Also email it to report.recipients.
        #[arg(long)]
        send: bool,
        /// Output format.
        #[arg(long, default_value = "markdown", value_parser = ["markdown", "html", "json"])]
        format: String,
        /// "last" (the lookback ending now) or an ISO week such as 2026-W47.
        #[arg(long, default_value = "last")]
        period: String,
    },
}

#[derive(Subcommand)]
enum InvestigationsCommand {
    /// Newest first.
    List {
        /// queued, running, finished, failed, limit_reached or cancelled.
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// One investigation with its finding and timeline.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let source = ConfigSource::discover(cli.config.clone());
    let config = match Config::load(&source).and_then(|c| tools::catalog::validate(&c).map(|()| c))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: invalid configuration: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    sre_agent::install_crypto_provider();
    match cli.command {
        Command::CheckConfig => check_config(&config, &source),
        Command::Serve => run(serve(config)),
        Command::Healthcheck { url, timeout } => run(healthcheck(&config, url, timeout)),
        Command::Ask { question, json } => ask(&config, &question, json),
        Command::Investigations { command } => match command {
            InvestigationsCommand::List { status, limit } => {
                run(agent::cli::list(&config, status.as_deref(), limit))
            }
            InvestigationsCommand::Show { id, json } => run(agent::cli::show(&config, &id, json)),
        },
        Command::Report {
            send,
            format,
            period,
        } => run(report_cmd::run(config, send, format, period)),
    }
}

fn run(fut: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(fut) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn ask(config: &Config, question: &str, json: bool) -> ExitCode {
    let mut succeeded = false;
    let code = run(async {
        succeeded = agent::cli::ask(config, question, json).await?;
        Ok(())
    });
    if code == ExitCode::SUCCESS && !succeeded {
        return ExitCode::FAILURE;
    }
    code
}

fn check_config(config: &Config, source: &ConfigSource) -> ExitCode {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = match &source.file {
        Some(f) => writeln!(
            out,
            "# configuration from {} (plus SRE_AGENT_* environment)",
            f.display()
        ),
        None => writeln!(
            out,
            "# built-in defaults (plus SRE_AGENT_* environment); no config file"
        ),
    };
    let enabled = config.enabled_integrations();
    let disabled: Vec<&str> = Config::INTEGRATIONS
        .iter()
        .copied()
        .filter(|i| !enabled.contains(i))
        .collect();
    let on = if enabled.is_empty() {
        "none".to_string()
    } else {
        enabled.join(", ")
    };
    let _ = writeln!(out, "# enabled integrations: {on}");
    let _ = writeln!(out, "# disabled integrations: {}\n", disabled.join(", "));
    let ignored = sre_agent::config::ignored_env_vars();
    if !ignored.is_empty() {
        let _ = writeln!(
            out,
            "# ignored environment variables (not a config section): {}\n",
            ignored.join(", ")
        );
    }
    out.push_str(&config.redacted_toml());
    out.push_str("\n# configuration is valid\n");
    // A closed pipe (`check-config | head`) is not an error worth a panic.
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    ExitCode::SUCCESS
}

async fn serve(config: Config) -> anyhow::Result<()> {
    telemetry::logging::init(&config.log);
    let app = App::build(config).await?;
    let token = CancellationToken::new();
    tokio::spawn(stop_on_signal(token.clone()));
    app.run_until_stopped(token).await
}

async fn stop_on_signal(token: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; stop with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received"),
        _ = int.recv() => tracing::info!("SIGINT received"),
    }
    token.cancel();
}

async fn healthcheck(
    config: &Config,
    url: Option<String>,
    timeout: Duration,
) -> anyhow::Result<()> {
    let base = url.unwrap_or_else(|| {
        let mut addr = config.listen_addr();
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        format!("http://{addr}")
    });
    let url = format!("{}/healthz", base.trim_end_matches('/'));
    let client = reqwest::Client::builder().timeout(timeout).build()?;
    let resp = client
        .get(&url)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("{url} is unreachable: {e}"))?;
    anyhow::ensure!(
        resp.status().is_success(),
        "{url} answered {}",
        resp.status()
    );
    println!("ok: {url}");
    Ok(())
}
