//! The sre-agent binary: parses the command line, loads the configuration and dispatches
//! to `sre_agent::cli`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use sre_agent::config::{Config, ConfigSource};
use sre_agent::{cli, tools};

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
        /// Ask a follow-up of this investigation (its finding and evidence become context).
        #[arg(long = "follow-up", value_name = "ID")]
        follow_up: Option<String>,
    },
    /// Serve sre-agent as an MCP server over stdio (for desktop assistants and IDEs): the
    /// read-only tools run here; investigations go to the running daemon's API.
    Mcp,
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
    /// Run the evaluation scenarios against the configured LLM: each in its own world
    /// (real Prometheus with backfilled series, fake Loki/Kubernetes/Proxmox/PBS/TrueNAS/
    /// Grafana) through the real daemon; prints pass/fail with reasons, steps, tokens,
    /// seconds and dollars. Exits 0 when every run passed, 1 otherwise.
    Eval {
        /// Directory of scenario directories (default: eval/scenarios).
        #[arg(long, value_name = "DIR")]
        scenarios: Option<PathBuf>,
        /// Run only this scenario (repeatable).
        #[arg(long, value_name = "NAME")]
        only: Vec<String>,
        /// Runs per scenario (gives a pass rate).
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
        /// Longest a run may take from trigger to finding.
        #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
        timeout: Duration,
        /// Rename every host, instance, service, job, pod, namespace, mount and guest of
        /// each scenario (world, trigger, expectations) to names drawn from this seed.
        #[arg(long, value_name = "SEED")]
        rename: Option<u64>,
    },
}

#[derive(Subcommand)]
enum InvestigationsCommand {
    /// Newest first.
    List {
        /// queued, running, finished, inconclusive, failed, limit_reached or cancelled.
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
    /// Say whether an investigation's finding was right or wrong (replaces an earlier
    /// verdict); incident memory tells the next investigation of the alert.
    Feedback {
        id: String,
        /// right or wrong.
        #[arg(value_parser = ["right", "wrong"])]
        verdict: String,
        /// What was actually going on (at most 1000 characters).
        #[arg(long)]
        note: Option<String>,
    },
}

fn main() -> ExitCode {
    sre_agent::app::heap::limit_arenas();
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
        Command::CheckConfig => {
            cli::check_config::run(&config, &source);
            ExitCode::SUCCESS
        }
        Command::Serve => run(cli::serve::run(config)),
        Command::Mcp => run(cli::mcp::run(config)),
        Command::Healthcheck { url, timeout } => {
            run(cli::healthcheck::run(&config, url.as_deref(), timeout))
        }
        Command::Ask {
            question,
            json,
            follow_up,
        } => {
            let mut succeeded = false;
            let code = run(async {
                succeeded = cli::ask::run(&config, &question, json, follow_up.as_deref()).await?;
                Ok(())
            });
            if code == ExitCode::SUCCESS && !succeeded {
                return ExitCode::FAILURE;
            }
            code
        }
        Command::Investigations { command } => match command {
            InvestigationsCommand::List { status, limit } => {
                run(cli::investigations::list(&config, status.as_deref(), limit))
            }
            InvestigationsCommand::Show { id, json } => {
                run(cli::investigations::show(&config, &id, json))
            }
            InvestigationsCommand::Feedback { id, verdict, note } => run(
                cli::investigations::feedback(&config, &id, &verdict, note.as_deref()),
            ),
        },
        Command::Report {
            send,
            format,
            period,
        } => run(cli::report::run(config, send, &format, &period)),
        Command::Eval {
            scenarios,
            only,
            repeat,
            json,
            timeout,
            rename,
        } => {
            let opts = cli::eval::EvalOptions {
                scenarios,
                only,
                repeat,
                json,
                timeout,
                rename,
            };
            let mut passed = false;
            let code = run(async {
                passed = cli::eval::run(&config, &opts).await?;
                Ok(())
            });
            if code == ExitCode::SUCCESS && !passed {
                return ExitCode::FAILURE;
            }
            code
        }
    }
}

/// Runs a command on a multi-threaded runtime; an error is printed with its causes.
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
