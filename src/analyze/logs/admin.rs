//! `admin_commands`: what people ran as root on each host, from the logs (Loki). Most
//! homelab incidents follow a change someone made by hand: a file removed to free space, a
//! unit edited, a crontab changed, a package upgraded, a guest unlocked. sudo and doas log
//! every command in one format on every distribution (`sudo[pid]: user : TTY=pts/1 ;
//! PWD=… ; USER=root ; COMMAND=/usr/bin/…`, `doas: user ran command … as root from …`), so
//! the commands are read from that format, not chosen by words: one fact per host, its
//! commands latest first, each with when and by whom, and whether sudo refused it.
//!
//! Commands run without a terminal over and over (`TTY=unknown`: a monitoring check, an
//! automation's sudo) are routine and left out; a person's commands are kept however often
//! they were typed. The lookback is at least a day: the change that set up an incident is
//! often hours older than its alert. Queries are built from constant label names and
//! patterns, never from the trigger's text.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::json;

use super::HOST_LABELS;
use crate::analyze::{
    AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source, human_seconds,
};
use crate::integrations::LokiClient;
use crate::integrations::loki::LogStream;
use crate::text::truncate;

const NAME: &str = "admin_commands";
/// The lines sudo and doas log for a command.
const COMMAND_PATTERN: &str = r"COMMAND=|doas: .+ ran command ";
/// Least lookback: the change behind an incident is often hours older than its alert.
const MIN_LOOKBACK: TimeDelta = TimeDelta::hours(24);
/// Lines read.
const LINES: u32 = 2000;
/// Most hosts (facts), and commands quoted per host.
const MAX_FACTS: usize = 4;
const MAX_COMMANDS: usize = 6;
/// Characters of one quoted command.
const COMMAND_CHARS: usize = 120;
/// How many runs without a terminal make a command routine.
const ROUTINE_RUNS: usize = 3;

pub struct AdminCommands(pub Arc<LokiClient>);

/// One command as logged.
#[derive(Clone, Debug, PartialEq)]
struct Command {
    at: DateTime<Utc>,
    user: String,
    /// The user it ran as (sudo's `USER=`), when not root.
    as_user: Option<String>,
    command: String,
    terminal: bool,
    refused: bool,
}

#[async_trait]
impl Analyzer for AdminCommands {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let labels = self.0.labels(scope.window_start, scope.now).await?;
        let Some(host_label) = HOST_LABELS
            .into_iter()
            .find(|l| labels.iter().any(|x| x == l))
        else {
            return Ok(Vec::new());
        };
        let lookback = scope.window().max(MIN_LOOKBACK);
        let start = scope.now.checked_sub_signed(lookback).unwrap_or(scope.now);
        let query = format!("{{{host_label}=~\".+\"}} |~ `{COMMAND_PATTERN}`");
        let streams = self.0.query_logs(&query, start, scope.now, LINES).await?;
        Ok(facts(&streams, host_label, &query, lookback, scope))
    }
}

/// One fact per host with the commands people ran there, hosts with the latest first.
fn facts(
    streams: &[LogStream],
    host_label: &str,
    query: &str,
    lookback: TimeDelta,
    scope: &Scope,
) -> Vec<Fact> {
    let mut by_host: BTreeMap<String, Vec<Command>> = BTreeMap::new();
    for s in streams {
        let Some(host) = s.labels.get(host_label) else {
            continue;
        };
        for (ns, line) in &s.entries {
            if let Some(c) = parse(line, DateTime::from_timestamp_nanos(*ns)) {
                by_host.entry(host.clone()).or_default().push(c);
            }
        }
    }
    let since = format!("{}m", lookback.num_minutes().max(1));
    let mut out: Vec<(DateTime<Utc>, Fact)> = Vec::new();
    for (host, mut commands) in by_host {
        drop_routine(&mut commands);
        commands.sort_by_key(|c| std::cmp::Reverse(c.at));
        commands.dedup_by(|a, b| a.command == b.command && a.user == b.user);
        let Some(latest) = commands.first().map(|c| c.at) else {
            continue;
        };
        let quoted: Vec<String> = commands
            .iter()
            .take(MAX_COMMANDS)
            .map(|c| describe(c, scope.now))
            .collect();
        let more = commands.len().saturating_sub(MAX_COMMANDS);
        let mut detail = format!("latest first: {}", quoted.join("; "));
        if more > 0 {
            detail.push_str(&format!("; and {more} more"));
        }
        let refused = commands.iter().any(|c| c.refused);
        let fact = Fact::new(
            FactClass::Change,
            NAME,
            Entity::new("host", host.clone()).on_host(Some(host.clone())),
            "commands run by hand as root",
            if refused {
                Severity::Warning
            } else {
                Severity::Info
            },
            Source::new("loki_query", json!({"query": query, "since": since})),
        )
        .since(Some(latest))
        .detail(detail);
        out.push((latest, fact));
    }
    out.sort_by_key(|(t, _)| std::cmp::Reverse(*t));
    out.into_iter().take(MAX_FACTS).map(|(_, f)| f).collect()
}

/// Commands run without a terminal [`ROUTINE_RUNS`] times or more: automation.
fn drop_routine(commands: &mut Vec<Command>) {
    let mut runs: BTreeMap<(String, String), usize> = BTreeMap::new();
    for c in commands.iter().filter(|c| !c.terminal) {
        *runs.entry((c.user.clone(), c.command.clone())).or_default() += 1;
    }
    commands.retain(|c| {
        c.terminal || runs.get(&(c.user.clone(), c.command.clone())) < Some(&ROUTINE_RUNS)
    });
}

/// "2026-11-28 13:40 UTC (5.0 h ago) ewan: rm -f /var/log/app/debug.log".
fn describe(c: &Command, now: DateTime<Utc>) -> String {
    let ago = now.signed_duration_since(c.at).num_seconds().max(0) as f64;
    let who = match &c.as_user {
        Some(u) => format!("{} (as {u})", c.user),
        None => c.user.clone(),
    };
    format!(
        "{} ({} ago) {who}{}: {}",
        c.at.format("%Y-%m-%d %H:%M UTC"),
        human_seconds(ago),
        if c.refused { ", refused" } else { "" },
        truncate(&c.command, COMMAND_CHARS)
    )
}

/// The command a sudo or doas line logs, if it is one.
fn parse(line: &str, at: DateTime<Utc>) -> Option<Command> {
    if let Some((head, command)) = line.split_once("COMMAND=") {
        // `sudo[40117]:     ewan : TTY=pts/1 ; PWD=/home/ewan ; USER=root ; COMMAND=…`
        let (who, fields) = head.split_once(" : ")?;
        let user = who.split_whitespace().last()?.to_string();
        let field = |key: &str| {
            fields
                .split(';')
                .map(str::trim)
                .find_map(|f| f.strip_prefix(key))
                .map(str::trim)
        };
        let as_user = field("USER=").filter(|u| *u != "root").map(str::to_string);
        let terminal = field("TTY=").is_some_and(|t| t != "unknown" && !t.is_empty());
        let refused = fields.contains("NOT in sudoers")
            || fields.contains("incorrect password")
            || fields.contains("command not allowed");
        return Some(Command {
            at,
            user,
            as_user,
            command: short(command.trim()),
            terminal,
            refused,
        });
    }
    // `doas: ewan ran command systemctl restart x as root from /home/ewan`
    let (_, rest) = line.split_once("doas: ")?;
    let (user, rest) = rest.split_once(" ran command ")?;
    let (command, target) = match rest.rsplit_once(" as ") {
        Some((c, t)) => (c, t.split_whitespace().next()),
        None => (rest, None),
    };
    Some(Command {
        at,
        user: user.trim().to_string(),
        as_user: target.filter(|t| *t != "root").map(str::to_string),
        command: short(command.trim()),
        // doas does not say; a person's command is the usual case.
        terminal: true,
        refused: false,
    })
}

/// The command with its program's directory left out (`/usr/bin/rm -f x` → `rm -f x`).
fn short(command: &str) -> String {
    let (program, args) = command.split_once(' ').unwrap_or((command, ""));
    let name = program.rsplit('/').next().unwrap_or(program);
    let name = if name.is_empty() { program } else { name };
    match args.is_empty() {
        true => name.to_string(),
        false => format!("{name} {args}"),
    }
}

#[cfg(test)]
#[path = "admin/tests.rs"]
mod tests;
