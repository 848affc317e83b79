//! Validation of tool arguments against the subset of JSON Schema tools use: an object
//! with typed properties (string, integer, number, boolean, array, object), `required`,
//! `enum`, and no unknown properties.

use serde_json::Value;

/// Checks `args` against `schema`; the error says what is wrong in words a model can act on.
pub fn validate_arguments(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(obj) = args.as_object() else {
        return Err(format!(
            "arguments must be a JSON object, got {}",
            type_name(args)
        ));
    };
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for r in required.iter().filter_map(Value::as_str) {
            if obj.get(r).is_none_or(Value::is_null) {
                return Err(format!("missing required argument \"{r}\""));
            }
        }
    }
    for (key, value) in obj {
        let Some(spec) = props.and_then(|p| p.get(key)) else {
            let known: Vec<&str> = props
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            return Err(format!(
                "unknown argument \"{key}\" (known: {})",
                known.join(", ")
            ));
        };
        if value.is_null() {
            continue;
        }
        if let Some(expected) = spec.get("type").and_then(Value::as_str) {
            let ok = match expected {
                "string" => value.is_string(),
                "integer" => value.is_i64() || value.is_u64(),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                "array" => value.is_array(),
                "object" => value.is_object(),
                _ => true,
            };
            if !ok {
                return Err(format!(
                    "argument \"{key}\" must be a {expected}, got {}",
                    type_name(value)
                ));
            }
        }
        if let Some(options) = spec.get("enum").and_then(Value::as_array)
            && !options.contains(value)
        {
            return Err(format!(
                "argument \"{key}\" must be one of {}",
                Value::Array(options.clone())
            ));
        }
    }
    Ok(())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"},
            "state": {"type": "string", "enum": ["active", "dropped"]}
        }, "required": ["query"]})
    }

    #[test]
    fn valid_arguments_pass_and_optional_nulls_are_allowed() {
        assert!(
            validate_arguments(
                &schema(),
                &json!({"query": "up", "limit": 5, "state": null})
            )
            .is_ok()
        );
    }

    #[test]
    fn each_kind_of_bad_argument_is_explained() {
        let cases = [
            (json!("up"), "must be a JSON object"),
            (json!({}), "missing required argument \"query\""),
            (json!({"query": 1}), "\"query\" must be a string"),
            (
                json!({"query": "up", "limit": "5"}),
                "\"limit\" must be a integer",
            ),
            (json!({"query": "up", "foo": 1}), "unknown argument \"foo\""),
            (json!({"query": "up", "state": "x"}), "must be one of"),
        ];
        for (args, want) in cases {
            let err = validate_arguments(&schema(), &args).unwrap_err();
            assert!(err.contains(want), "{args}: {err}");
        }
    }
}
