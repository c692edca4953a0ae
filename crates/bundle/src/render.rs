//! A bundle directory rendered to an `olm.bundle` (catalog-formats.md §C.6), and the pieces
//! of that rendering the legacy formats share.
use super::csv;
use super::dir::BundleDir;
use super::manifests::{self, object_property};
use super::metadata::Item;
use catalog::Gvk;
use catalog::json::write_string;
use catalog::{Bundle, Origin, Property, RelatedImage, property};
use serde_json::Value;

/// Renders `b` with `image` as its pull spec (`""` for a directory without a template).
pub fn render(b: &BundleDir, image: &str) -> Bundle {
    let csv_object = b.csv();
    let package = b.package();
    let mut props: Vec<Property> = items_as_properties(&b.metadata.properties.items);
    props.push(package_property(
        package,
        &csv::version(csv_object),
        &csv::release(csv_object),
    ));
    props.extend(csv::annotation_properties(csv_object));
    keep_last_package(&mut props);

    for m in b.objects.iter().filter(|m| m.is_crd()) {
        props.extend(manifests::crd_gvks(&m.object).iter().map(gvk_property));
    }
    props.extend(csv::owned_api_services(csv_object).iter().map(gvk_property));
    props.extend(required_gvks(csv_object).iter().map(gvk_required_property));
    props.extend(
        b.metadata
            .dependencies
            .items
            .iter()
            .map(dependency_property),
    );
    props.extend(b.objects.iter().map(|m| object_property(&m.object)));

    Bundle {
        name: b.name().to_owned(),
        package: package.to_owned(),
        image: image.to_owned(),
        properties: finish_properties(props),
        related_images: related_images(csv_object, image),
        origin: Origin {
            file: b.path.as_str().into(),
            line: 0,
        },
        external_objects: 0,
    }
}

fn items_as_properties(items: &[Item]) -> Vec<Property> {
    items
        .iter()
        .map(|i| Property {
            kind: i.kind.clone(),
            value: i.value.clone(),
        })
        .collect()
}

/// Upstream lets the last `olm.package` seen win over earlier ones.
pub(super) fn keep_last_package(props: &mut Vec<Property>) {
    if let Some(last) = props.iter().rposition(|p| p.kind == property::PACKAGE) {
        let mut i = 0;
        props.retain(|p| {
            let keep = p.kind != property::PACKAGE || i == last;
            i += 1;
            keep
        });
    }
}

/// The APIs a CSV requires: its required CRDs and required API services.
pub(crate) fn required_gvks(csv_object: &Value) -> Vec<Gvk> {
    let mut gvks: Vec<Gvk> = csv::required_crds(csv_object)
        .iter()
        .map(csv::CrdDescription::gvk)
        .collect();
    gvks.extend(csv::required_api_services(csv_object));
    gvks
}

/// `olm.package` with upstream's key order (`packageName, version[, release]`).
pub(crate) fn package_property(package: &str, version: &str, release: &str) -> Property {
    let mut value = String::from("{\"packageName\":");
    write_string(package, &mut value);
    value.push_str(",\"version\":");
    write_string(version, &mut value);
    if !release.is_empty() {
        value.push_str(",\"release\":");
        write_string(release, &mut value);
    }
    value.push('}');
    Property {
        kind: property::PACKAGE.to_owned(),
        value,
    }
}

pub(crate) fn gvk_property(gvk: &Gvk) -> Property {
    Property {
        kind: property::GVK.to_owned(),
        value: gvk.value_text(),
    }
}

pub(crate) fn gvk_required_property(gvk: &Gvk) -> Property {
    Property {
        kind: property::GVK_REQUIRED.to_owned(),
        value: gvk.value_text(),
    }
}

/// A `dependencies.yaml` item as a property: `olm.gvk` → `olm.gvk.required`, `olm.package` →
/// `olm.package.required`, anything else under its own type.
pub(crate) fn dependency_property(item: &Item) -> Property {
    let value: Value = serde_json::from_str(&item.value).unwrap_or(Value::Null);
    let field = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or("");
    match item.kind.as_str() {
        property::GVK => gvk_required_property(&Gvk {
            group: field("group").to_owned(),
            version: field("version").to_owned(),
            kind: field("kind").to_owned(),
        }),
        property::PACKAGE => {
            let mut text = String::from("{\"packageName\":");
            write_string(field("packageName"), &mut text);
            text.push_str(",\"versionRange\":");
            write_string(field("version"), &mut text);
            text.push('}');
            Property {
                kind: property::PACKAGE_REQUIRED.to_owned(),
                value: text,
            }
        }
        _ => Property {
            kind: item.kind.clone(),
            value: item.value.clone(),
        },
    }
}

/// Exact duplicates removed, sorted by (type, value text), manifests last (§C.6).
pub(crate) fn finish_properties(mut props: Vec<Property>) -> Vec<Property> {
    props.sort_by(|a, b| (&a.kind, &a.value).cmp(&(&b.kind, &b.value)));
    props.dedup();
    let is_object =
        |p: &Property| p.kind == property::BUNDLE_OBJECT || p.kind == property::CSV_METADATA;
    let (mut plain, objects): (Vec<_>, Vec<_>) = props.into_iter().partition(|p| !is_object(p));
    plain.extend(objects);
    plain
}

/// The CSV's related images, then the bundle image and the operator's container images
/// that are not listed yet, sorted by image (stable, so equal images keep their order).
pub(crate) fn related_images(csv_object: &Value, image: &str) -> Vec<RelatedImage> {
    let mut images = csv::related_images(csv_object);
    let extra = (!image.is_empty())
        .then(|| image.to_owned())
        .into_iter()
        .chain(csv::deployment_images(csv_object));
    for extra in extra {
        if !images.iter().any(|r| r.image == extra) {
            images.push(RelatedImage {
                name: String::new(),
                image: extra,
            });
        }
    }
    images.sort_by(|a, b| a.image.cmp(&b.image));
    images
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prop(kind: &str, value: &str) -> Property {
        Property {
            kind: kind.into(),
            value: value.into(),
        }
    }

    #[test]
    fn properties_are_deduplicated_sorted_with_manifests_last() {
        let got = finish_properties(vec![
            prop("olm.bundle.object", r#"{"data":"b"}"#),
            prop("olm.package", r#"{"packageName":"p","version":"1.0.0"}"#),
            prop("olm.gvk", r#"{"group":"g","kind":"K","version":"v1"}"#),
            prop("olm.bundle.object", r#"{"data":"a"}"#),
            prop("olm.gvk", r#"{"group":"g","kind":"K","version":"v1"}"#),
            prop("custom", "1"),
        ]);
        let kinds: Vec<(&str, &str)> = got
            .iter()
            .map(|p| (p.kind.as_str(), p.value.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("custom", "1"),
                ("olm.gvk", r#"{"group":"g","kind":"K","version":"v1"}"#),
                ("olm.package", r#"{"packageName":"p","version":"1.0.0"}"#),
                ("olm.bundle.object", r#"{"data":"a"}"#),
                ("olm.bundle.object", r#"{"data":"b"}"#),
            ]
        );
    }

    #[test]
    fn the_last_package_property_wins() {
        let mut props = vec![
            prop("olm.package", "first"),
            prop("olm.label", "x"),
            prop("olm.package", "last"),
        ];
        keep_last_package(&mut props);
        assert_eq!(props, [prop("olm.label", "x"), prop("olm.package", "last")]);
    }

    #[test]
    fn package_property_keeps_upstream_key_order_with_a_release() {
        assert_eq!(
            package_property("p", "1.0.0", "2").value,
            r#"{"packageName":"p","version":"1.0.0","release":"2"}"#
        );
    }

    #[test]
    fn related_images_list_each_image_once_and_only_deployment_containers() {
        let csv = json!({"spec": {
            "relatedImages": [{"name": "op", "image": "r/op:1"}],
            "install": {"strategy": "deployment", "spec": {"deployments": [{"spec": {"template": {"spec": {
                "containers": [{"image": "r/op:1"}, {"image": "r/side:1"}]}}}}]}}
        }});
        let images: Vec<(String, String)> = related_images(&csv, "r/bundle:1")
            .into_iter()
            .map(|r| (r.name, r.image))
            .collect();
        assert_eq!(
            images,
            [
                (String::new(), "r/bundle:1".to_owned()),
                ("op".to_owned(), "r/op:1".to_owned()),
                (String::new(), "r/side:1".to_owned()),
            ]
        );
        let other = json!({"spec": {"install": {"strategy": "helm", "spec": {"deployments": [
            {"spec": {"template": {"spec": {"containers": [{"image": "r/op:1"}]}}}}]}}}});
        assert_eq!(related_images(&other, ""), []);
    }

    #[test]
    fn dependencies_become_required_properties() {
        let item = |kind: &str, value: &str| Item {
            kind: kind.into(),
            value: value.into(),
        };
        assert_eq!(
            dependency_property(&item(
                "olm.package",
                r#"{"packageName":"b","version":">1"}"#
            )),
            prop(
                "olm.package.required",
                r#"{"packageName":"b","versionRange":">1"}"#
            )
        );
        assert_eq!(
            dependency_property(&item(
                "olm.gvk",
                r#"{"group":"g","kind":"K","version":"v1"}"#
            )),
            prop(
                "olm.gvk.required",
                r#"{"group":"g","kind":"K","version":"v1"}"#
            )
        );
        assert_eq!(
            dependency_property(&item("olm.label", r#"{"label":"x"}"#)),
            prop("olm.label", r#"{"label":"x"}"#)
        );
    }
}
