//! A bundle directory rendered to an `olm.bundle` (catalog-formats.md §C.6), and the pieces
//! of that rendering the legacy formats share.
use super::csv::{self, Gvk};
use super::dependencies;
use super::dir::BundleDir;
use super::manifests::{self, object_property};
use super::metadata::Item;
use crate::catalog::json::write_string;
use crate::catalog::{Bundle, Origin, Property, RelatedImage, property};
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
pub fn required_gvks(csv_object: &Value) -> Vec<Gvk> {
    let mut gvks: Vec<Gvk> = csv::required_crds(csv_object)
        .iter()
        .map(csv::CrdDescription::gvk)
        .collect();
    gvks.extend(csv::required_api_services(csv_object));
    gvks
}

/// `olm.package` with upstream's key order (`packageName, version[, release]`).
pub fn package_property(package: &str, version: &str, release: &str) -> Property {
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

pub fn gvk_property(gvk: &Gvk) -> Property {
    Property {
        kind: property::GVK.to_owned(),
        value: gvk.value_text(),
    }
}

pub fn gvk_required_property(gvk: &Gvk) -> Property {
    Property {
        kind: property::GVK_REQUIRED.to_owned(),
        value: gvk.value_text(),
    }
}

/// A `dependencies.yaml` item as a property: `olm.gvk` → `olm.gvk.required`, `olm.package` →
/// `olm.package.required`, anything else under its own type.
pub fn dependency_property(item: &Item) -> Property {
    let value: Value = serde_json::from_str(&item.value).unwrap_or(Value::Null);
    let field = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or("");
    match item.kind.as_str() {
        dependencies::GVK => gvk_required_property(&Gvk {
            group: field("group").to_owned(),
            version: field("version").to_owned(),
            kind: field("kind").to_owned(),
        }),
        dependencies::PACKAGE => {
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
pub fn finish_properties(mut props: Vec<Property>) -> Vec<Property> {
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
pub fn related_images(csv_object: &Value, image: &str) -> Vec<RelatedImage> {
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
