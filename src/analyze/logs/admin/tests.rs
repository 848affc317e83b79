use std::collections::BTreeMap;

use super::*;

fn at(h: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_790_000_000, 0).unwrap() - TimeDelta::hours(h)
}

fn stream(host: &str, lines: &[(i64, &str)]) -> LogStream {
    let labels: BTreeMap<String, String> = [
        ("host".to_string(), host.to_string()),
        ("unit".to_string(), "sudo".to_string()),
    ]
    .into_iter()
    .collect();
    LogStream {
        labels: labels.into_iter().collect(),
        entries: lines
            .iter()
            .map(|(h, l)| (at(*h).timestamp_nanos_opt().unwrap(), l.to_string()))
            .collect(),
    }
}

#[test]
fn sudo_lines_of_every_usual_shape_are_read() {
    let c = parse(
        "sudo[40117]:     alice : TTY=pts/1 ; PWD=/home/alice ; USER=root ; COMMAND=/usr/bin/rm -f /var/log/app/debug.log",
        at(5),
    )
    .unwrap();
    assert_eq!(c.user, "alice");
    assert_eq!(c.command, "rm -f /var/log/app/debug.log");
    assert!(c.terminal && !c.refused && c.as_user.is_none());

    let c = parse(
        "sudo: nagios : TTY=unknown ; PWD=/ ; USER=root ; COMMAND=/usr/lib/nagios/plugins/check_raid",
        at(1),
    )
    .unwrap();
    assert_eq!((c.user.as_str(), c.terminal), ("nagios", false));

    let c = parse(
        "sudo[9]:      bob : 3 incorrect password attempts ; TTY=pts/0 ; PWD=/home/bob ; USER=postgres ; COMMAND=/usr/bin/psql",
        at(1),
    )
    .unwrap();
    assert!(c.refused);
    assert_eq!(c.as_user.as_deref(), Some("postgres"));

    let c = parse(
        "doas: carol ran command systemctl restart nginx as root from /home/carol",
        at(2),
    )
    .unwrap();
    assert_eq!(
        (c.user.as_str(), c.command.as_str()),
        ("carol", "systemctl restart nginx")
    );

    assert_eq!(
        parse(
            "pam_unix(sudo:session): session opened for user root",
            at(1)
        ),
        None
    );
    assert_eq!(parse("COMMAND=x but no user field", at(1)), None);
    // Any UTF-8, no panic.
    assert!(
        parse(
            "sudo[1]: zoë : TTY=pts/2 ; USER=root ; COMMAND=/bin/échо ✓",
            at(1)
        )
        .is_some()
    );
}

#[test]
fn each_host_gets_its_commands_latest_first_without_routine_automation() {
    let scope = Scope::new(at(0), Some(at(0) - TimeDelta::minutes(20)));
    let mut lines = vec![
        (
            13,
            "sudo[1]: alice : TTY=pts/1 ; PWD=/home/alice ; USER=root ; COMMAND=/usr/bin/systemctl restart app.service",
        ),
        (
            5,
            "sudo[2]: alice : TTY=pts/1 ; PWD=/home/alice ; USER=root ; COMMAND=/usr/bin/rm -f /var/log/app/debug.log",
        ),
    ];
    // A monitoring check every hour: routine.
    let check = "sudo[3]: zabbix : TTY=unknown ; PWD=/ ; USER=root ; COMMAND=/usr/bin/lsof -n";
    for h in 1..10 {
        lines.push((h, check));
    }
    let streams = vec![
        stream("tarn", &lines),
        stream(
            "quay",
            &[(
                20,
                "sudo[4]: dan : TTY=pts/0 ; PWD=/ ; USER=root ; COMMAND=/usr/bin/apt upgrade",
            )],
        ),
        stream(
            "idle",
            &[(
                2,
                "sudo[5]: zabbix : TTY=unknown ; USER=root ; COMMAND=/bin/true",
            ); 3],
        ),
    ];
    let facts = facts(&streams, "host", "q", MIN_LOOKBACK, &scope);
    assert_eq!(facts.len(), 2, "{facts:#?}");
    assert_eq!(facts[0].entity.name, "tarn", "latest change first");
    let d = facts[0].detail.as_deref().unwrap();
    assert!(
        d.find("rm -f").unwrap() < d.find("systemctl restart").unwrap(),
        "{d}"
    );
    assert!(d.contains("(5.0 h ago) alice"), "{d}");
    assert!(!d.contains("lsof"), "routine: {d}");
    assert_eq!(facts[0].class, FactClass::Change);
    assert_eq!(facts[0].since, Some(at(5)));
    assert_eq!(facts[1].entity.name, "quay");
}
