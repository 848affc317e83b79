use super::*;

/// Midnight UTC, a Sunday (2027-01-17).
const MIDNIGHT: f64 = 1_800_144_000.0;
const H: f64 = 3600.0;

/// Boot times as the exporter publishes them, read every ten minutes from `from` to `to`:
/// each boot holds until the next (the kernel's boot time wobbling by a second).
fn published(boots: &[f64], from: f64, to: f64, first: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut t = from;
    let mut i = 0u32;
    while t <= to {
        let b = boots
            .iter()
            .rev()
            .find(|b| **b <= t)
            .copied()
            .unwrap_or(first);
        out.push((t, b + f64::from(i % 2)));
        t += 600.0;
        i += 1;
    }
    out
}

fn daily(days: &[i64], hour: f64, jitter: &[f64]) -> Vec<f64> {
    days.iter()
        .enumerate()
        .map(|(i, d)| MIDNIGHT + *d as f64 * DAY + hour * H + jitter[i % jitter.len()])
        .collect()
}

#[test]
fn a_host_booting_at_four_every_day_keeps_a_schedule_read_from_its_published_boot_time() {
    // 04:00 give or take a few minutes on each of the last five days; now is 10:00.
    let boots = daily(&[-4, -3, -2, -1, 0], 4.0, &[60.0, -120.0, 180.0]);
    let now = MIDNIGHT + 10.0 * H;
    let from = now - 15.0 * DAY;
    let series = published(&boots, from, now, from - 30.0 * DAY);
    let read = boot_times(&series, false, from, now);
    assert_eq!(read.len(), 5, "{read:?}");
    let s = schedule(&read, now).unwrap();
    assert_eq!((s.period, s.hits, s.due), (DAY, 5, 5));
    let entity = Entity::new("host", "elm-1");
    let f = schedule_fact("scheduled_reboots", entity, &s, Source::promql("x")).unwrap();
    assert_eq!(
        f.what,
        "boots at ≈04:00 UTC every day (5 of the last 5 days, last 2027-01-17 03:58 UTC)"
    );
    assert_eq!((f.class, f.severity), (FactClass::Change, Severity::Info));
    assert!(f.detail.as_deref().unwrap().ends_with("not a crash"));
    // At 03:50 today's boot is not due yet: four of four.
    let early = MIDNIGHT + 3.8 * H;
    let s = schedule(&read[..4], early).unwrap();
    assert_eq!((s.hits, s.due), (4, 4));
    // A day missed of seven is still a schedule; two missed of five are not.
    let gappy = daily(&[-6, -5, -4, -2, -1, 0], 4.0, &[0.0]);
    assert_eq!(schedule(&gappy, now).map(|s| (s.hits, s.due)), Some((6, 7)));
    let sparse = daily(&[-4, -2, 0], 4.0, &[0.0]);
    assert_eq!(schedule(&sparse, now), None);
}

#[test]
fn a_schedule_around_midnight_is_one_time_not_two_days() {
    let boots = daily(&[-4, -3, -2, -1, 0], 0.0, &[-240.0, 300.0]);
    let s = schedule(&boots, MIDNIGHT + 8.0 * H).unwrap();
    assert_eq!((s.hits, s.due), (5, 5));
    let f = schedule_fact("t", Entity::new("host", "h"), &s, Source::promql("x")).unwrap();
    // Three of the five four minutes before midnight: the median boot's time.
    assert!(
        f.what
            .starts_with("boots at ≈23:55 UTC every day (5 of the last 5 days"),
        "{}",
        f.what
    );
}

#[test]
fn a_weekly_reboot_is_its_weekday_and_irregular_or_looping_reboots_are_no_schedule() {
    // Sundays at 03:00, three weeks running.
    let weekly = daily(&[-14, -7, 0], 3.0, &[120.0, -60.0]);
    let s = schedule(&weekly, MIDNIGHT + 12.0 * H).unwrap();
    assert_eq!((s.period, s.hits, s.due), (WEEK, 3, 3));
    let f = schedule_fact("t", Entity::new("host", "h"), &s, Source::promql("x")).unwrap();
    assert!(
        f.what
            .starts_with("boots at ≈03:00 UTC every Sunday (3 of the last 3 weeks"),
        "{}",
        f.what
    );
    // Crashes at no particular time.
    let irregular = [
        MIDNIGHT - 9.0 * DAY + 13.2 * H,
        MIDNIGHT - 6.0 * DAY + 2.7 * H,
        MIDNIGHT - 5.0 * DAY + 19.5 * H,
        MIDNIGHT - 2.0 * DAY + 8.1 * H,
        MIDNIGHT - 1.0 * DAY + 22.9 * H,
    ];
    assert_eq!(schedule(&irregular, MIDNIGHT + 12.0 * H), None);
    // A crash loop every hour for two days boots at every time of day.
    let looping: Vec<f64> = (0..48)
        .map(|i| MIDNIGHT - 2.0 * DAY + f64::from(i) * H)
        .collect();
    assert_eq!(schedule(&looping, MIDNIGHT + 12.0 * H), None);
    // A schedule that stopped a week ago is not one now.
    let stopped = daily(&[-12, -11, -10, -9], 4.0, &[0.0]);
    assert_eq!(schedule(&stopped, MIDNIGHT + 12.0 * H), None);
    // Two boots a day apart are not yet a daily schedule, nor one boot.
    assert_eq!(
        schedule(&daily(&[-1, 0], 4.0, &[0.0]), MIDNIGHT + 5.0 * H),
        None
    );
    assert_eq!(schedule(&[MIDNIGHT], MIDNIGHT + H), None);
    assert_eq!(schedule(&[], MIDNIGHT), None);
}

#[test]
fn a_wobbling_boot_time_a_wrapped_uptime_and_an_old_boot_are_no_boots() {
    let now = MIDNIGHT;
    let from = now - 15.0 * DAY;
    // Up for a month: its boot time wobbles by a second and is older than the read.
    let calm = published(&[], from, now, from - 30.0 * DAY);
    assert!(boot_times(&calm, false, from, now).is_empty());
    // An SNMP uptime whose 32-bit counter wrapped moves its boot time by one wrap.
    let b = from + DAY - TIMETICKS_WRAP_SECS;
    let wrapped = [(from, b), (from + 600.0, b + TIMETICKS_WRAP_SECS + 0.5)];
    assert!(boot_times(&wrapped, true, from, now).is_empty());
    assert_eq!(boot_times(&wrapped, false, from, now).len(), 1);
    // Bad values and a boot time in the future are skipped.
    let bad = [(from, f64::NAN), (from + 600.0, now + DAY)];
    assert!(boot_times(&bad, false, from, now).is_empty());
}

/// The captured node_exporter's boot time (a real host's `node_boot_time_seconds`).
fn captured_boot_time() -> f64 {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/exporters/node_exporter.prom"
    );
    let text = std::fs::read_to_string(path).expect("fixture");
    text.lines()
        .find_map(|l| l.strip_prefix("node_boot_time_seconds "))
        .and_then(|v| v.trim().parse().ok())
        .expect("a boot time")
}

#[test]
fn the_captured_hosts_boot_time_held_for_days_is_no_schedule_and_daily_boots_after_it_are() {
    let captured = captured_boot_time();
    // Read over 15 days from just after the captured boot: one boot, no schedule.
    let from = captured + 600.0;
    let now = from + 15.0 * DAY;
    let held = published(&[], from, now, captured);
    assert!(boot_times(&held, false, from, now).is_empty());
    // The same host rebooted by a timer at the captured boot's time of day, four days.
    let boots: Vec<f64> = (11..15).map(|d| captured + f64::from(d) * DAY).collect();
    let series = published(&boots, from, now, captured);
    let s = schedule(&boot_times(&series, false, from, now), now).unwrap();
    assert_eq!((s.period, s.hits), (DAY, 4));
    let apart = (s.center - boots[0]).rem_euclid(DAY);
    assert!(apart.min(DAY - apart) < 2.0, "{s:?}");
}
