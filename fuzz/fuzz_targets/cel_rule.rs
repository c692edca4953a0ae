//! CEL rules of olm.constraint, compiled and evaluated against a bundle's properties.
#![no_main]
use libfuzzer_sys::fuzz_target;
use catalog::types::Property;
use resolve::CelRule;

fuzz_target!(|data: &[u8]| {
    let Ok(rule) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(rule) = CelRule::compile(rule) else {
        return;
    };
    let property = |kind: &str, value: &str| Property {
        kind: kind.to_owned(),
        value: value.to_owned(),
    };
    let properties = [
        property("olm.package", r#"{"packageName":"etcd","version":"0.9.4"}"#),
        property(
            "olm.gvk",
            r#"{"group":"etcd.database.coreos.com","kind":"EtcdCluster","version":"v1beta2"}"#,
        ),
        property("olm.label", r#"{"label":"stable"}"#),
        property("olm.maxOpenShiftVersion", "4.16"),
    ];
    let _ = rule.matches(&properties);
});
