//! Which route a request names (catalogd-http.md §1): `/catalogs/{catalog}/api/v1/all` and,
//! when enabled, `…/metas` and `…/graphql`, matched as Go's `ServeMux` matches them: non-canonical paths are
//! redirected to their cleaned form, trailing slashes are not tolerated, and the catalog
//! segment is percent-decoded before it is checked.
use catalog::model::is_dns1123_label;
use store::content::MetasFilter;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endpoint {
    All,
    Metas,
    Graphql,
}

/// The endpoints served besides `all` (catalogd keeps each behind an alpha gate).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Optional {
    pub(crate) metas: bool,
    pub(crate) graphql: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Routed {
    /// `301` to this location.
    Redirect(String),
    /// No such route.
    Unknown,
    Found {
        endpoint: Endpoint,
        catalog: String,
    },
}

pub(crate) fn route(path: &str, query: Option<&str>, optional: Optional) -> Routed {
    let clean = clean_path(path);
    if clean != path {
        return Routed::Redirect(match query {
            Some(q) => format!("{clean}?{q}"),
            None => clean,
        });
    }
    let segments: Vec<&str> = path.split('/').collect();
    let ["", catalogs, catalog, api, v1, last] = segments.as_slice() else {
        return Routed::Unknown;
    };
    let literal = |raw: &str, want: &str| percent_decode(raw, false).as_deref() == Some(want);
    if catalog.is_empty()
        || !literal(catalogs, "catalogs")
        || !literal(api, "api")
        || !literal(v1, "v1")
    {
        return Routed::Unknown;
    }
    let endpoint = if literal(last, "all") {
        Endpoint::All
    } else if optional.metas && literal(last, "metas") {
        Endpoint::Metas
    } else if optional.graphql && literal(last, "graphql") {
        Endpoint::Graphql
    } else {
        return Routed::Unknown;
    };
    match percent_decode(catalog, false) {
        Some(catalog) => Routed::Found { endpoint, catalog },
        None => Routed::Unknown,
    }
}

/// Go's `path.Clean` of an absolute path, keeping a trailing slash.
fn clean_path(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                kept.pop();
            }
            s => kept.push(s),
        }
    }
    let mut clean = format!("/{}", kept.join("/"));
    if path.ends_with('/') && clean != "/" {
        clean.push('/');
    }
    clean
}

/// `%XX` decoding (and `+` as a space in query strings); `None` for a malformed escape or
/// bytes that are not UTF-8.
fn percent_decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
                continue;
            }
            b'+' if plus_is_space => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The messages of Kubernetes' DNS-1123 subdomain check that `name` fails, as catalogd words
/// them; empty when it passes.
pub fn dns1123_problems(name: &str) -> Vec<&'static str> {
    let mut problems = Vec::new();
    if name.len() > 253 {
        problems.push("must be no more than 253 characters");
    }
    if !name.split('.').all(is_dns1123_label) {
        problems.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        );
    }
    problems
}

/// The filter of a metas query string: `schema`, `package` and `name`, the first value of
/// each, empty ones ignored. `Err` names a parameter that is none of these. Pairs Go's query
/// parser drops (holding `;`, or a bad escape) are ignored.
pub(crate) fn metas_filter(query: Option<&str>) -> Result<MetasFilter, String> {
    let mut filter = MetasFilter::default();
    for pair in query.unwrap_or_default().split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (Some(key), Some(value)) = (percent_decode(key, true), percent_decode(value, true))
        else {
            continue;
        };
        let slot = match key.as_str() {
            "schema" => &mut filter.schema,
            "package" => &mut filter.package,
            "name" => &mut filter.name,
            _ => return Err(key),
        };
        // The first value is the one used, empty or not.
        if slot.is_none() {
            *slot = Some(value);
        }
    }
    for slot in [&mut filter.schema, &mut filter.package, &mut filter.name] {
        if slot.as_deref() == Some("") {
            *slot = None;
        }
    }
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(endpoint: Endpoint, catalog: &str) -> Routed {
        Routed::Found {
            endpoint,
            catalog: catalog.into(),
        }
    }

    const BOTH: Optional = Optional {
        metas: true,
        graphql: true,
    };
    const NEITHER: Optional = Optional {
        metas: false,
        graphql: false,
    };

    #[test]
    fn routes_as_go_serve_mux() {
        assert_eq!(
            route("/catalogs/tiny/api/v1/all", None, BOTH),
            found(Endpoint::All, "tiny")
        );
        assert_eq!(
            route("/catalogs/tiny/api/v1/metas", None, BOTH),
            found(Endpoint::Metas, "tiny")
        );
        assert_eq!(
            route("/catalogs/tiny/api/v1/metas", None, NEITHER),
            Routed::Unknown
        );
        assert_eq!(
            route("/catalogs/tiny/api/v1/graphql", None, BOTH),
            found(Endpoint::Graphql, "tiny")
        );
        assert_eq!(
            route("/catalogs/tiny/api/v1/graphql", None, NEITHER),
            Routed::Unknown
        );
        assert_eq!(
            route("/catalogs/T%69ny/api/v1/all", None, BOTH),
            found(Endpoint::All, "Tiny")
        );
        for unknown in [
            "/",
            "/catalogs/",
            "/catalogs/tiny/",
            "/catalogs/tiny/api/v1",
            "/catalogs/tiny/api/v1/all/",
            "/catalogs/tiny/api/v1/graphql/",
            "/catalogs/tiny.jsonl",
            "/catalogs/tiny/api/v2/all",
        ] {
            assert_eq!(route(unknown, None, BOTH), Routed::Unknown, "{unknown}");
        }
        assert_eq!(
            route("/catalogs//tiny/api/v1/all", Some("a=1"), BOTH),
            Routed::Redirect("/catalogs/tiny/api/v1/all?a=1".into())
        );
        assert_eq!(
            route("/catalogs/x/../tiny/./api/v1/all/", None, BOTH),
            Routed::Redirect("/catalogs/tiny/api/v1/all/".into())
        );
        assert_eq!(
            route("/catalogs/tiny/api/v1/all/..", None, BOTH),
            Routed::Redirect("/catalogs/tiny/api/v1".into())
        );
    }

    #[test]
    fn catalog_names_are_dns1123_subdomains() {
        assert!(dns1123_problems("tiny").is_empty());
        assert!(dns1123_problems("a-1.b2").is_empty());
        for bad in ["Tiny", "-a", "a-", "a..b", "a_b", ".a", ""] {
            assert_eq!(dns1123_problems(bad).len(), 1, "{bad}");
        }
        assert_eq!(
            dns1123_problems(&"a".repeat(254)),
            ["must be no more than 253 characters"]
        );
        assert_eq!(dns1123_problems(&"A".repeat(254)).len(), 2);
    }

    #[test]
    fn metas_parameters() {
        let filter = |s: Option<&str>, p: Option<&str>, n: Option<&str>| MetasFilter {
            schema: s.map(String::from),
            package: p.map(String::from),
            name: n.map(String::from),
        };
        assert_eq!(metas_filter(None), Ok(filter(None, None, None)));
        assert_eq!(
            metas_filter(Some("schema=&package=beta-op&package=alpha-op")),
            Ok(filter(None, Some("beta-op"), None))
        );
        assert_eq!(
            metas_filter(Some("name=a%2Bb+c&schema=olm.bundle")),
            Ok(filter(Some("olm.bundle"), None, Some("a+b c")))
        );
        assert_eq!(
            metas_filter(Some("schema=a;b&name=%zz&package=p")),
            Ok(filter(None, Some("p"), None))
        );
        assert_eq!(
            metas_filter(Some("Schema=olm.package")),
            Err("Schema".into())
        );
        assert_eq!(metas_filter(Some("version")), Err("version".into()));
    }
}
