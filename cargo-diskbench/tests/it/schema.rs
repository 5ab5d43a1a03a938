//! The record's JSON schema, `engine/record/jsonschemas/record.json`, derived from the record's
//! types (schemars): a reader of records checks against it without reading Rust. Regenerate
//! with `UPDATE_SCHEMA=1 cargo test -p cargo-diskbench --test it schema::`.

use crate::common;

/// The committed schema is what the types derive now: a field added, renamed or retyped
/// without regenerating it fails here.
#[test]
fn the_committed_record_schema_is_current() {
    let path = common::repo_root().join("engine/record/jsonschemas/record.json");
    let derived = record::json_schema();
    if std::env::var_os("UPDATE_SCHEMA").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &derived).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == derived,
        "{} is not what the record's types derive: regenerate it with UPDATE_SCHEMA=1 \
         cargo test -p cargo-diskbench --test it schema:: and commit it",
        path.display()
    );
    // It describes real records: every field a record writes, at the top and in its parts, is
    // a property the schema names.
    let schema: serde_json::Value = serde_json::from_str(&committed).unwrap();
    let text = committed.as_str();
    for rec in common::fixture::records(3) {
        let json = serde_json::to_value(&rec).unwrap();
        let top = json.as_object().unwrap();
        for key in top.keys() {
            assert!(schema["properties"].get(key).is_some(), "no property {key}");
        }
        for part in ["runner", "storage", "settings"] {
            for key in top[part].as_object().unwrap().keys() {
                assert!(
                    text.contains(&format!("\"{key}\":")),
                    "{part}.{key} not in the schema"
                );
            }
        }
    }
    assert_eq!(schema["title"], "Record");
}
