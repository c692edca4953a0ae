//! The author tools applied to catalogs named by reference (anything `render` reads: paths
//! or images), loaded through [`source`].
use super::diff::{CatalogDiff, diff};
use super::mermaid::{MermaidOptions, write_mermaid};
use super::svg::write_svg;
use catalog::file::ReadLimits;
use source::image::Images;
use source::reference::load_reference;
use source::render::{MigrationLevel, render_references};

/// `render-graph` and `diff` have no --max-file-size: catalogs are read within the default cap.
const LIMITS: ReadLimits = ReadLimits::DEFAULT;

/// An upgrade-graph picture.
pub enum Picture {
    /// opm's Mermaid text.
    Mermaid(MermaidOptions),
    /// An SVG picture, of one package or all.
    Svg { package: Option<String> },
}

/// A picture, and the warnings drawing it gave (opm prints them to stderr).
pub struct Drawing {
    pub text: String,
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    #[error(transparent)]
    Load(#[from] source::Error),
    #[error("{0}")]
    Draw(crate::Error),
}

/// The upgrade graph of the catalogs `references` name, merged, as `picture`.
pub fn draw_references(
    images: &mut Images,
    references: &[String],
    picture: &Picture,
) -> Result<Drawing, DrawError> {
    let dc = render_references(images, LIMITS, references, None, MigrationLevel::None)?;
    let drawing = match picture {
        Picture::Svg { package } => write_svg(&dc, package.as_deref()).map(|text| Drawing {
            text,
            warnings: Vec::new(),
        }),
        Picture::Mermaid(options) => write_mermaid(&dc, options).map(|m| Drawing {
            text: m.text,
            warnings: m.warnings,
        }),
    };
    drawing.map_err(DrawError::Draw)
}

/// What updating the catalog `old` names to the one `new` names changes.
pub fn diff_references(
    images: &mut Images,
    old: &str,
    new: &str,
) -> Result<CatalogDiff, source::Error> {
    let old = load_reference(images, LIMITS, old, None)?;
    Ok(diff(&old, &load_reference(images, LIMITS, new, None)?))
}
