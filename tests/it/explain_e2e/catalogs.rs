//! The catalogs of the explain scenarios, made here: small packages whose bundles carry
//! their CSV and CRDs as `olm.bundle.object` (OLM installs them with no unpack Job), each
//! built to plant one cause.
use base64::Engine;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// One bundle of a made-up package.
#[derive(Default, Clone, Copy)]
pub(super) struct Bundle<'a> {
    pub(super) package: &'a str,
    pub(super) version: &'a str,
    pub(super) replaces: &'a str,
    pub(super) skip_range: &'a str,
    /// Kinds of group example.com, version v1, it owns.
    pub(super) owns: &'a [&'a str],
    pub(super) requires_package: Option<(&'a str, &'a str)>,
    pub(super) requires_kind: Option<&'a str>,
    /// Supported install modes (default: OwnNamespace, SingleNamespace, AllNamespaces).
    pub(super) modes: &'a [&'a str],
}

impl Bundle<'_> {
    pub(super) fn name(&self) -> String {
        format!("{}.v{}", self.package, self.version)
    }

    fn csv(&self) -> Value {
        let modes = if self.modes.is_empty() {
            &["OwnNamespace", "SingleNamespace", "AllNamespaces"][..]
        } else {
            self.modes
        };
        let install_modes: Vec<Value> = [
            "OwnNamespace",
            "SingleNamespace",
            "MultiNamespace",
            "AllNamespaces",
        ]
        .iter()
        .map(|m| json!({"type": m, "supported": modes.contains(m)}))
        .collect();
        let owned: Vec<Value> = self
            .owns
            .iter()
            .map(|k| json!({"name": crd_name(k), "version": "v1", "kind": k}))
            .collect();
        let required: Vec<Value> = self
            .requires_kind
            .iter()
            .map(|k| json!({"name": crd_name(k), "version": "v1", "kind": k}))
            .collect();
        let mut spec = json!({
            "displayName": self.package, "version": self.version,
            "installModes": install_modes,
            "install": {"strategy": "deployment", "spec": {"deployments": []}},
            "customresourcedefinitions": {"owned": owned, "required": required},
        });
        if !self.replaces.is_empty() {
            spec["replaces"] = json!(self.replaces);
        }
        let mut annotations = json!({});
        if !self.skip_range.is_empty() {
            annotations["olm.skipRange"] = json!(self.skip_range);
        }
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": self.name(), "annotations": annotations},
            "spec": spec,
        })
    }

    fn fbc(&self) -> Value {
        let mut properties = vec![
            json!({"type": "olm.package", "value": {"packageName": self.package, "version": self.version}}),
            object(&self.csv()),
        ];
        for kind in self.owns {
            properties.push(json!({"type": "olm.gvk", "value": {"group": "example.com", "version": "v1", "kind": kind}}));
            properties.push(object(&crd(kind)));
        }
        if let Some((package, range)) = self.requires_package {
            properties.push(json!({"type": "olm.package.required", "value": {"packageName": package, "versionRange": range}}));
        }
        if let Some(kind) = self.requires_kind {
            properties.push(json!({"type": "olm.gvk.required", "value": {"group": "example.com", "version": "v1", "kind": kind}}));
        }
        json!({"schema": "olm.bundle", "name": self.name(), "package": self.package,
               "image": "", "properties": properties})
    }
}

fn crd_name(kind: &str) -> String {
    format!("{}s.example.com", kind.to_lowercase())
}

fn crd(kind: &str) -> Value {
    let plural = format!("{}s", kind.to_lowercase());
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name(kind)},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    })
}

fn object(manifest: &Value) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(manifest.to_string());
    json!({"type": "olm.bundle.object", "value": {"data": data}})
}

/// Writes an FBC directory `dir` with `bundles`, one channel `stable` per package holding
/// its bundles in the order given (each entry with its bundle's replaces and skipRange).
pub(super) fn write(dir: &Path, bundles: &[Bundle<'_>]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut packages: Vec<&str> = bundles.iter().map(|b| b.package).collect();
    packages.dedup();
    let mut out = String::new();
    for p in packages {
        let entries: Vec<Value> = bundles
            .iter()
            .filter(|b| b.package == p)
            .map(|b| {
                let mut e = json!({"name": b.name()});
                if !b.replaces.is_empty() {
                    e["replaces"] = json!(b.replaces);
                }
                if !b.skip_range.is_empty() {
                    e["skipRange"] = json!(b.skip_range);
                }
                e
            })
            .collect();
        out += &json!({"schema": "olm.package", "name": p, "defaultChannel": "stable"}).to_string();
        out.push('\n');
        out +=
            &json!({"schema": "olm.channel", "package": p, "name": "stable", "entries": entries})
                .to_string();
        out.push('\n');
        for b in bundles.iter().filter(|b| b.package == p) {
            out += &b.fbc().to_string();
            out.push('\n');
        }
    }
    std::fs::write(dir.join("catalog.json"), out).unwrap();
    dir.to_owned()
}

/// The bundles of the catalog every namespace sees (`olm/main`).
pub(super) fn main_bundles() -> Vec<Bundle<'static>> {
    let b = Bundle::default;
    vec![
        // A dependency only the down catalog has.
        Bundle {
            package: "needs-down",
            version: "1.0.0",
            requires_package: Some(("downdep", ">=1.0.0")),
            ..b()
        },
        // An API nobody provides.
        Bundle {
            package: "needs-api",
            version: "1.0.0",
            requires_kind: Some("Gizmo"),
            ..b()
        },
        // Two operators owning one CRD.
        Bundle {
            package: "alpha",
            version: "1.0.0",
            owns: &["Widget"],
            ..b()
        },
        Bundle {
            package: "beta",
            version: "1.0.0",
            owns: &["Widget"],
            ..b()
        },
        // Only channel stable, for the removed channel, the missing startingCSV and the
        // namespace without an OperatorGroup.
        Bundle {
            package: "chan",
            version: "1.0.0",
            ..b()
        },
        // OwnNamespace only, under an AllNamespaces OperatorGroup.
        Bundle {
            package: "ownonly",
            version: "1.0.0",
            modes: &["OwnNamespace"],
            ..b()
        },
        // An install, then an upgrade, each waiting for approval.
        Bundle {
            package: "upgrader",
            version: "1.0.0",
            ..b()
        },
        Bundle {
            package: "upgrader",
            version: "2.0.0",
            replaces: "upgrader.v1.0.0",
            ..b()
        },
    ]
}

/// The down catalog's only package.
pub(super) fn down_bundles() -> Vec<Bundle<'static>> {
    vec![Bundle {
        package: "downdep",
        version: "1.2.0",
        ..Bundle::default()
    }]
}

/// The upgrade gap: `gap` first holds 1.0.0; then its server is replaced by one whose channel
/// starts at 1.1.0, with no edge from 1.0.0.
pub(super) fn gap_bundles(second: bool) -> Vec<Bundle<'static>> {
    if !second {
        return vec![Bundle {
            package: "gappy",
            version: "1.0.0",
            ..Bundle::default()
        }];
    }
    vec![
        Bundle {
            package: "gappy",
            version: "1.1.0",
            ..Bundle::default()
        },
        Bundle {
            package: "gappy",
            version: "1.2.0",
            replaces: "gappy.v1.1.0",
            skip_range: ">=1.1.0 <1.2.0",
            ..Bundle::default()
        },
    ]
}
