//! `--alpha-image-ref-template`: the image of a bundle rendered from a directory, from a Go
//! template over `{{.Package}}`, `{{.Name}}` and `{{.Version}}`. Only those field actions are
//! supported; anything else in braces is refused when the template is parsed, so a typo
//! cannot silently produce a wrong image for every bundle.
use std::str::FromStr;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Package,
    Name,
    Version,
}

/// A parsed image reference template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageTemplate(Vec<Part>);

impl FromStr for ImageTemplate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = s;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = after.find("}}").ok_or_else(|| {
                format!("invalid image reference template {s:?}: unclosed action")
            })?;
            parts.push(match after[..close].trim() {
                ".Package" => Part::Package,
                ".Name" => Part::Name,
                ".Version" => Part::Version,
                other => {
                    return Err(format!(
                        "invalid image reference template {s:?}: unsupported action {{{{{other}}}}} (only {{{{.Package}}}}, {{{{.Name}}}} and {{{{.Version}}}})"
                    ));
                }
            });
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(ImageTemplate(parts))
    }
}

impl ImageTemplate {
    pub fn expand(&self, package: &str, name: &str, version: &str) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.as_str(),
                Part::Package => package,
                Part::Name => name,
                Part::Version => version,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_every_field() {
        let t: ImageTemplate = "quay.io/{{.Package}}/{{ .Name }}:v{{.Version}}"
            .parse()
            .unwrap();
        assert_eq!(
            t.expand("foo", "foo.v1", "1.0.0"),
            "quay.io/foo/foo.v1:v1.0.0"
        );
    }

    #[test]
    fn refuses_unknown_actions_and_unclosed_braces() {
        assert_eq!(
            "x/{{.Pkg}}".parse::<ImageTemplate>().unwrap_err(),
            "invalid image reference template \"x/{{.Pkg}}\": unsupported action {{.Pkg}} (only {{.Package}}, {{.Name}} and {{.Version}})"
        );
        assert_eq!(
            "x/{{.Name".parse::<ImageTemplate>().unwrap_err(),
            "invalid image reference template \"x/{{.Name\": unclosed action"
        );
    }
}
