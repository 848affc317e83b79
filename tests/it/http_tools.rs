//! Declarative `[[tools.http]]` tools: a template filled and sent with its header against a
//! fake, and every bad declaration refused at load naming the key.

use serde_json::json;

use crate::support::fake_appliance::FakeAppliance;
use crate::support::test_config;
use crate::support::tool_registry::{call, call_err, load_err, registry};

#[tokio::test]
async fn a_declarative_http_tool_fills_its_template_sends_its_header_and_follows_the_json_path() {
    let fake = FakeAppliance::start(
        vec![(
            "GET /api/v1/devices/living%20room/state".into(),
            json!({"data": {"sensors": [{"name": "temp", "value": 21.5}, {"name": "humidity", "value": 48}]}}),
        )],
        "Token hass-secret",
        json!({}),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
[[tools.http]]
name = "room_sensor"
description = "Sensor value of a room"
url = "{}/api/v1/devices/{{room}}/state?index={{index}}"
header_name = "Authorization"
header_value = "Token hass-secret"
json_path = "data.sensors[1].value"
[tools.http.parameters]
type = "object"
required = ["room", "index"]
[tools.http.parameters.properties.room]
type = "string"
[tools.http.parameters.properties.index]
type = "integer"
"#,
        fake.url
    );
    let config = test_config(dir.path(), &toml);
    assert!(!config.redacted_toml().contains("hass-secret"));
    let r = registry(&config);
    assert_eq!(r.names(), ["room_sensor"]);
    let out = call(
        &r,
        "room_sensor",
        json!({"room": "living room", "index": 1}),
    )
    .await;
    assert_eq!(out, "48");
    assert_eq!(
        fake.requests(),
        ["GET /api/v1/devices/living%20room/state?index=1"]
    );
    let err = call_err(&r, "room_sensor", json!({"room": "x"})).await;
    assert!(err.contains("missing required argument \"index\""), "{err}");
}

#[test]
fn bad_declarative_http_tools_are_rejected_at_load_naming_the_key() {
    let tool = |body: &str| format!("[[tools.http]]\ndescription = \"d\"\n{body}\n");
    let ok_params = "[tools.http.parameters]\ntype = \"object\"\n[tools.http.parameters.properties.q]\ntype = \"string\"\n";
    let cases = [
        (
            tool("name = \"bad name!\"\nurl = \"http://h/x\""),
            "tools.http[0].name: invalid name \"bad name!\"",
        ),
        (
            tool("name = \"k8s_nodes\"\nurl = \"http://h/x\""),
            "tools.http[0].name: \"k8s_nodes\" clashes with a built-in tool",
        ),
        (
            format!(
                "{}{}",
                tool("name = \"a\"\nurl = \"http://h/x\""),
                tool("name = \"a\"\nurl = \"http://h/y\"")
            ),
            "tools.http[1].name: duplicate name \"a\"",
        ),
        (
            tool("name = \"a\"\nurl = \"http://h/{q}\""),
            "tools.http[0].url: placeholder {q} is not declared",
        ),
        (
            format!(
                "{}{ok_params}",
                tool("name = \"a\"\nurl = \"http://{q}/x\"")
            ),
            "tools.http[0].url:",
        ),
        (
            tool("name = \"a\"\nurl = \"not a url\""),
            "tools.http[0].url: invalid URL template",
        ),
        (
            tool("name = \"a\"\nurl = \"http://h/x\"\nheader_name = \"X-Key\""),
            "tools.http[0].header_value: header_name and header_value must be set together",
        ),
        (
            tool("name = \"a\"\nurl = \"http://h/x\"\nmax_bytes = 0"),
            "tools.http[0].max_bytes",
        ),
        (
            tool("name = \"a\"\nurl = \"http://h/x\"\nmethod = \"POST\""),
            "unknown",
        ),
    ];
    for (toml, want) in cases {
        let err = load_err(&toml);
        assert!(err.contains(want), "want {want:?}, got {err:?} for\n{toml}");
    }
}
