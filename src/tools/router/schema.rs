//! A validator for the JSON-schema subset our tool specs use: `type` (one or a list), `required`,
//! `properties`, `additionalProperties: false`, `enum`, `minimum`/`maximum`, `minLength`,
//! `minItems`/`maxItems` and `items`. Every error names the field it is about (`edits[0].old`), so
//! the model can mend its call. A keyword outside the subset is ignored, never a pass by accident:
//! the specs are ours and a unit test checks each of them uses only these keywords.

use serde_json::Value;
use thiserror::Error;

/// Keywords `validate` understands. Specs are checked against this list in tests.
pub const KEYWORDS: &[&str] = &[
    "type",
    "description",
    "required",
    "properties",
    "additionalProperties",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "minItems",
    "maxItems",
    "items",
    "default",
];

/// Arguments that do not fit the schema.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("`{field}`: {message}")]
pub struct SchemaError {
    /// The field, as a path from the arguments object (`(arguments)` for the object itself).
    pub field: String,
    pub message: String,
}

/// Check `value` against `schema`.
pub fn validate(schema: &Value, value: &Value) -> Result<(), SchemaError> {
    check(schema, value, "")
}

fn err(field: &str, message: String) -> SchemaError {
    SchemaError {
        field: if field.is_empty() {
            "(arguments)".into()
        } else {
            field.to_string()
        },
        message,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "number" => v.is_number(),
        // 3.0 is an integer to JSON schema; serde_json reads it as a float.
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => type_name(v) == other,
    }
}

fn check(schema: &Value, value: &Value, field: &str) -> Result<(), SchemaError> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    if let Some(ty) = schema.get("type") {
        let allowed: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| has_type(value, t)) {
            return Err(err(
                field,
                format!(
                    "expected {}, got {}",
                    allowed.join(" or "),
                    type_name(value)
                ),
            ));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.contains(value)
    {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(err(field, format!("must be one of {}", list.join(", "))));
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            return Err(err(field, format!("must be at least {min}, got {n}")));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            return Err(err(field, format!("must be at most {max}, got {n}")));
        }
    }
    if let (Some(s), Some(min)) = (
        value.as_str(),
        schema.get("minLength").and_then(Value::as_u64),
    ) && (s.chars().count() as u64) < min
    {
        return Err(err(
            field,
            format!("must be at least {min} characters long"),
        ));
    }
    if let Value::Array(items) = value {
        check_array(schema, items, field)?;
    }
    if let Value::Object(obj) = value {
        check_object(schema, obj, field)?;
    }
    Ok(())
}

fn check_array(
    schema: &serde_json::Map<String, Value>,
    items: &[Value],
    field: &str,
) -> Result<(), SchemaError> {
    let len = items.len() as u64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && len < min
    {
        return Err(err(
            field,
            format!("needs at least {min} item(s), got {len}"),
        ));
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && len > max
    {
        return Err(err(
            field,
            format!("takes at most {max} item(s), got {len}"),
        ));
    }
    if let Some(item_schema) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{field}[{i}]"))?;
        }
    }
    Ok(())
}

fn check_object(
    schema: &serde_json::Map<String, Value>,
    obj: &serde_json::Map<String, Value>,
    field: &str,
) -> Result<(), SchemaError> {
    let join = |key: &str| {
        if field.is_empty() {
            key.to_string()
        } else {
            format!("{field}.{key}")
        }
    };
    if let Some(Value::Array(required)) = schema.get("required") {
        for key in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(key) {
                return Err(err(&join(key), "is required".into()));
            }
        }
    }
    let props = schema.get("properties").and_then(Value::as_object);
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, v) in obj {
        match props.and_then(|p| p.get(key)) {
            Some(sub) => check(sub, v, &join(key))?,
            None if closed => {
                let known: Vec<&str> = props
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return Err(err(
                    &join(key),
                    format!(
                        "is not an argument of this tool (it takes: {})",
                        known.join(", ")
                    ),
                ));
            }
            None => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["path"],
            "additionalProperties": false,
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "edits": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["old"],
                    "properties": {"old": {"type": "string"}}}}
            }
        })
    }

    #[test]
    fn errors_name_the_field() {
        let s = schema();
        let cases = [
            (json!({}), "path", "is required"),
            (json!({"path": 3}), "path", "expected string, got integer"),
            (json!({"path": ""}), "path", "at least 1"),
            (json!({"path": "x", "limit": 0}), "limit", "at least 1"),
            (json!({"path": "x", "limit": 11}), "limit", "at most 10"),
            (
                json!({"path": "x", "limit": 1.5}),
                "limit",
                "expected integer",
            ),
            (json!({"path": "x", "mode": "c"}), "mode", "one of"),
            (json!({"path": "x", "edits": []}), "edits", "at least 1"),
            (
                json!({"path": "x", "edits": [{"old": 1}]}),
                "edits[0].old",
                "expected string",
            ),
            (
                json!({"path": "x", "edits": [{}]}),
                "edits[0].old",
                "is required",
            ),
            (json!({"path": "x", "bogus": 1}), "bogus", "takes: "),
            (json!([1]), "(arguments)", "expected object"),
        ];
        for (value, field, needle) in cases {
            let e = validate(&s, &value).unwrap_err();
            assert_eq!(e.field, field, "{value}");
            assert!(e.message.contains(needle), "{value}: {}", e.message);
        }
        validate(
            &s,
            &json!({"path": "x", "limit": 3.0, "edits": [{"old": "a"}]}),
        )
        .unwrap();
    }

    #[test]
    fn the_coding_specs_use_only_the_validator_keywords() {
        fn walk(v: &serde_json::Value, tool: &str) {
            if let Some(o) = v.as_object() {
                for (k, sub) in o {
                    assert!(KEYWORDS.contains(&k.as_str()), "{tool}: {k}");
                    match k.as_str() {
                        "properties" => sub
                            .as_object()
                            .unwrap()
                            .values()
                            .for_each(|p| walk(p, tool)),
                        "items" => walk(sub, tool),
                        _ => {}
                    }
                }
            }
        }
        let specs = crate::tools::coding::specs();
        assert_eq!(
            specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            crate::tools::coding::CODING_TOOLS
        );
        for s in &specs {
            walk(&s.parameters, &s.name);
        }
    }
}
