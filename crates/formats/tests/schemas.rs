//! The committed JSON Schemas are what the types generate, and a report the profiler's types
//! write carries the schema's identifier and required fields.

#[test]
fn schemas_are_current() {
    let folder = formats::schemas::folder();
    for (name, generated) in formats::schemas::generated() {
        let path = folder.join(name);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} differs from what the types generate: run `cargo run -p formats --bin write-schemas` \
             and commit the result",
            path.display()
        );
    }
}

#[test]
fn the_report_schema_names_the_current_version_and_the_old_ones() {
    let text = std::fs::read_to_string(formats::schemas::folder().join("report.schema.json"))
        .expect("the committed report schema");
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        schema["properties"]["schema"]["const"],
        formats::report::SCHEMA
    );
    let old: Vec<&str> = schema["x-old-schemas"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let expected: Vec<&str> = formats::report::OLD_SCHEMAS
        .iter()
        .map(|(s, _)| *s)
        .collect();
    assert_eq!(old, expected);
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    for field in ["schema", "device", "totals", "rows", "environment"] {
        assert!(required.contains(&field), "{field} in {required:?}");
    }
}
