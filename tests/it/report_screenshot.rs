//! The weekly report email in a real browser: headless Chromium takes a screenshot of the
//! email's HTML part (its `cid:` charts swapped for `data:` URIs, as a mail client shows
//! them) with a markdown narrative, both charts and the alert hygiene table. The screenshot
//! is kept in target/tmp/report-screenshot/ (the path is printed) for people to look at.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sre_agent::config::TimeZone;
use sre_agent::report::model::{
    AlertStat, Availability, HygieneFinding, HygieneIssue, Report, ReportData, ReportStatus,
    ReportTrigger, SloStatus, Summary,
};
use sre_agent::report::period::{PeriodSpec, ReportWindow};
use sre_agent::report::render;

use crate::support::external::require_tool;

const WIDTH: u32 = 900;
const HEIGHT: u32 = 2600;

const NARRATIVE: &str = "# Weekly summary\n\nA **busy** week: `DiskFillingUp` on pve1 fired \
                         for *66 hours* and is still firing.\n\n## Worth acting on\n\n\
                         1. Free space on pve1 `/var/lib/vz`\n2. Raise `for:` on HighCPU\n\n\
                         | Alert | Episodes |\n|---|--:|\n| NodeDown | 3 |\n\n\
                         <script>document.body.innerHTML = 'owned'</script>";

fn report() -> Report {
    let now = chrono::DateTime::from_timestamp(1_795_000_000, 0).unwrap();
    let mut d = ReportData::default();
    let days = [
        "Mon 16", "Tue 17", "Wed 18", "Thu 19", "Fri 20", "Sat 21", "Sun 22",
    ];
    d.alerts.data.per_day = days
        .iter()
        .zip([2, 0, 5, 1, 0, 7, 3])
        .map(|(d, n)| (d.to_string(), n))
        .collect();
    d.alerts.data.total_episodes = 18;
    d.alerts.data.alerts = vec![AlertStat {
        alertname: "HighCPU".into(),
        severity: "warning".into(),
        episodes: 9,
        firing_minutes: 31.0,
        instances: vec!["pve2:9100".into()],
    }];
    d.slos.data.per_day = days
        .iter()
        .zip([1.0, 0.999, 0.97, 1.0, 0.995, 1.0, 1.0])
        .map(|(d, v)| (d.to_string(), v))
        .collect();
    d.slos.data.slos = vec![SloStatus {
        name: "Web availability".into(),
        objective: 0.99,
        achieved: Some(0.9949),
        met: Some(true),
        budget_left: Some(0.49),
    }];
    d.slos.data.probes = vec![Availability {
        job: "blackbox".into(),
        instance: "https://nas.home".into(),
        ratio: 0.97,
        downtime_minutes: 302.0,
    }];
    d.hygiene.data.rules_checked = 12;
    d.hygiene.data.findings = vec![
        HygieneFinding {
            alertname: "HighCPU".into(),
            issue: HygieneIssue::Flapping,
            evidence: "9 of 9 episodes on pve2:9100 were shorter than 10m (median 3m)".into(),
            suggestion: "Raise for: from 5m to 10m: it would have held back 8 of these 9 short \
                         episodes."
                .into(),
        },
        HygieneFinding {
            alertname: "DiskFillingUp".into(),
            issue: HygieneIssue::NeverResolved,
            evidence: "still firing at the end of the period on pve1:9100, for 66h".into(),
            suggestion: "Fix the cause or silence it with an end date.".into(),
        },
        HygieneFinding {
            alertname: "BackupLate".into(),
            issue: HygieneIssue::NoSeverity,
            evidence: "the rule in /etc/prometheus/rules/pbs.yml has no severity label".into(),
            suggestion: "Add severity: warning under labels:.".into(),
        },
    ];
    Report {
        id: "screenshot".into(),
        trigger: ReportTrigger::Cli,
        window: ReportWindow::resolve(
            PeriodSpec::Last,
            now,
            Duration::from_secs(7 * 86_400),
            chrono_tz::UTC,
        ),
        timezone: TimeZone::default(),
        created_at: now,
        status: ReportStatus::Generated,
        delivery_error: None,
        summary: Summary {
            text: NARRATIVE.into(),
            model: Some("m".into()),
            fallback_reason: None,
        },
        data: d,
    }
}

/// Runs headless Chromium on `page`, writing a `WIDTH`×`HEIGHT` screenshot to `png`.
fn screenshot(page: &Path, png: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-extensions",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={WIDTH},{HEIGHT}"))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium exited with {status}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium took over 90 s for one screenshot");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The screenshot's pixels as RGB.
fn decode(png: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let mut decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut buf).unwrap();
    let channels = frame.color_type.samples();
    let px = buf[..frame.buffer_size()]
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (frame.width, frame.height, px)
}

fn close(a: [u8; 3], b: [u8; 3]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= 6)
}

#[test]
fn the_report_email_renders_in_a_real_browser_with_its_narrative_charts_and_hygiene() {
    if !require_tool("chromium") {
        return;
    }
    let email = render::for_email(&report());
    // No raw markdown in the HTML part, the model's script only as text.
    for line in email.html.lines() {
        assert!(!line.trim_start().starts_with('#'), "{line}");
    }
    assert!(!email.html.contains("**") && !email.html.contains("<script"));
    assert!(email.html.contains(">Alert hygiene</h2>"));
    assert_eq!(email.charts.len(), 2);

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report-email.html");
    std::fs::write(&page, email.preview_html()).unwrap();
    let png = dir.join("report-email.png");
    let _ = std::fs::remove_file(&png);
    screenshot(&page, &png);
    println!(
        "report screenshot: {} (page {})",
        png.display(),
        page.display()
    );

    let (w, h, px) = decode(&png);
    assert_eq!((w, h), (WIDTH, HEIGHT));
    let white = px.iter().filter(|p| close(**p, [255, 255, 255])).count();
    let background = px.iter().filter(|p| close(**p, [243, 244, 246])).count();
    let ink = px.len() - white - background;
    assert!(
        ink * 50 > px.len(),
        "only {ink} of {} pixels drawn",
        px.len()
    );
    // Dark text (the headings, the narrative, the tables) is there.
    let dark = px.iter().filter(|p| p.iter().all(|c| *c < 90)).count();
    assert!(dark > 5_000, "{dark} dark pixels");
    // Both charts loaded: their bar colours appear as solid areas. (Had the narrative's
    // script run, it would have replaced the page: no charts, little text.)
    for (name, bar) in [("alerts", [214, 69, 65]), ("availability", [46, 139, 87])] {
        let n = px.iter().filter(|p| close(**p, bar)).count();
        assert!(n > 2_000, "{name} chart: {n} bar pixels");
    }
}
