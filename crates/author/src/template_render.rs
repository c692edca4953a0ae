//! `render-template`: a catalog template rendered to its output. The template's bundles are
//! named by image (pulled through [`source`]) or, beyond opm, by bundle directory; the
//! result is migrated as asked and written as JSON, YAML or opm's Mermaid graph.
use super::mermaid::{MermaidOptions, write_mermaid};
use super::template::Kind;
use catalog::file::ReadLimits;
use catalog::substitutes::SubstitutesFor;
use catalog::{Bundle, DeclarativeConfig, write};
use source::bundle_ref::{BundleRefError, PulledImage, ReadBundle};
use source::image::Images;
use source::render::{ImageTemplate, MigrationLevel, migrate};
use std::collections::HashSet;
use std::path::Path;

/// `render-template` has no --max-file-size: bundles are read within the default cap.
const LIMITS: ReadLimits = ReadLimits::DEFAULT;

/// What `render-template` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateOutput {
    Json,
    Yaml,
    Mermaid,
}

/// A template to render and how.
pub struct TemplateRequest<'a> {
    /// The template type, or None to take it from the input's `schema`.
    pub kind: Option<Kind>,
    pub input: &'a [u8],
    pub output: TemplateOutput,
    pub level: MigrationLevel,
    /// The image of bundles named by directory (default: the directory as written).
    pub image_template: Option<&'a ImageTemplate>,
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("auto-detecting template type: {0}")]
    Detect(crate::Error),
    #[error("rendering template: {0}")]
    Render(crate::Error),
    #[error("{0}")]
    Migrate(String),
    #[error("writing output: {0}")]
    Write(String),
}

/// Renders the template of `request`, pulling the images it names with `images`, into the
/// bytes of its output.
pub fn render_template(
    request: &TemplateRequest,
    images: &mut Images,
) -> Result<Vec<u8>, TemplateError> {
    let kind = match request.kind {
        Some(kind) => kind,
        None => Kind::detect(request.input).map_err(TemplateError::Detect)?,
    };
    // Migrations apply to the bundles the template renders, as opm's renderer applies them,
    // not to the bundles a substitutes template lists already rendered. They run once the
    // template is rendered: the semver template reads the CSV of a bundle it rendered.
    let mut rendered = HashSet::new();
    let mut render_bundle = |r: &str| {
        let bundle = render_bundle(images, r, request.image_template)?;
        rendered.insert(bundle.name.clone());
        Ok(vec![bundle])
    };
    let mut dc = kind
        .render(request.input, &mut render_bundle)
        .map_err(TemplateError::Render)?;
    for bundle in dc.bundles.iter_mut().filter(|b| rendered.contains(&b.name)) {
        let mut one = DeclarativeConfig {
            bundles: vec![std::mem::take(bundle)],
            ..Default::default()
        };
        let migrated = migrate(&mut one, request.level);
        *bundle = one.bundles.pop().unwrap_or_default();
        migrated.map_err(|e| TemplateError::Migrate(e.to_string()))?;
    }
    warn_about_cycles(&dc);
    write_output(&dc, request.output).map_err(TemplateError::Write)
}

/// A rendered catalog whose `olm.substitutesFor` annotations form a cycle is written all the
/// same (opm accepts it), with a warning for each cycle.
fn warn_about_cycles(dc: &DeclarativeConfig) {
    for cycle in SubstitutesFor::of_bundles(&dc.bundles).cycles() {
        tracing::warn!(package = %cycle.package, "{cycle}");
    }
}

fn write_output(dc: &DeclarativeConfig, output: TemplateOutput) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match output {
        TemplateOutput::Json => write::write_json(dc, &mut out).map_err(|e| e.to_string())?,
        TemplateOutput::Yaml => write::write_yaml(dc, &mut out).map_err(|e| e.to_string())?,
        TemplateOutput::Mermaid => {
            let options = MermaidOptions {
                v0_semantics: true,
                ..Default::default()
            };
            out = write_mermaid(dc, &options)
                .map_err(|e| e.to_string())?
                .text
                .into_bytes();
        }
    }
    Ok(out)
}

/// A template's bundle reference as its one `olm.bundle`, whose image is the reference as
/// written: a bundle image, or (beyond opm, for authors working on a checkout) a bundle
/// directory, whose image is `template` expanded when given.
fn render_bundle(
    images: &mut Images,
    r: &str,
    template: Option<&ImageTemplate>,
) -> Result<Bundle, String> {
    let fail = |e: &dyn std::fmt::Display| format!("render reference {r:?}: {e}");
    let path = Path::new(r);
    if path.exists() {
        if !path.is_dir() {
            return Err(fail(&format_args!(
                "ref {r:?} is not a directory: not allowed"
            )));
        }
        let bundle = ReadBundle::read_dir(path, LIMITS).map_err(|e| fail(&e))?;
        let image = template.map_or_else(|| r.to_owned(), |t| bundle.image_from(t));
        return Ok(bundle.render(&image));
    }
    let pulled = match PulledImage::pull(images, r) {
        // The client options are at fault, not this reference.
        Err(BundleRefError::Client(e)) => return Err(e.to_string()),
        pulled => pulled.map_err(|e| fail(&e))?,
    };
    if !pulled.is_bundle_image() {
        return Err(fail(&"cannot render declarative config image: not allowed"));
    }
    Ok(pulled.read(LIMITS).map_err(|e| fail(&e))?.render(r))
}
