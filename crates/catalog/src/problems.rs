//! The validation error of a catalog: every problem found, as a flat list and rendered as
//! the tree of catalog-formats.md §A.4, each object line naming where the object was defined.
use super::types::Origin;
use std::collections::BTreeMap;
use std::fmt;

/// One problem: the objects it is about (outermost first, e.g. `package "foo"`,
/// `channel "alpha"`), the document it was found in, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub(crate) path: Vec<String>,
    pub(crate) origin: Option<Origin>,
    pub(crate) message: String,
}

/// All problems of a catalog that failed validation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidationError {
    pub(crate) problems: Vec<Problem>,
    /// Where each object on a problem path is defined, keyed by its path.
    objects: BTreeMap<Vec<String>, Origin>,
}

/// One object on a problem path: its label (`package "foo"`) and where it is defined.
pub(crate) type Object<'a> = (String, &'a Origin);

impl ValidationError {
    pub fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    /// The message of the only problem, when there is one and it is about the catalog
    /// itself (no object path): what opm's `ConvertToModel` returns bare, before the model
    /// validation whose problems it draws as a tree.
    pub fn alone(&self) -> Option<&str> {
        match self.problems.as_slice() {
            [only] if only.path.is_empty() => Some(&only.message),
            _ => None,
        }
    }

    /// Records a problem about the object at the end of `path` (the catalog itself when
    /// `path` is empty), found in the document at `origin`.
    pub(crate) fn add(&mut self, path: &[Object], origin: Option<&Origin>, message: String) {
        let labels: Vec<String> = path.iter().map(|(label, _)| label.clone()).collect();
        for depth in 1..=path.len() {
            self.objects
                .entry(labels[..depth].to_vec())
                .or_insert_with(|| path[depth - 1].1.clone());
        }
        self.problems.push(Problem {
            path: labels,
            origin: origin.cloned(),
            message,
        });
    }
}

#[derive(Default)]
struct Node<'a> {
    origin: Option<&'a Origin>,
    children: BTreeMap<&'a str, Node<'a>>,
    messages: Vec<String>,
}

// Written by hand, not derived with thiserror: the message is a tree drawn over many lines
// (sorted, with branch characters), which no format string can say.
impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut root = Node::default();
        for p in &self.problems {
            let mut node = &mut root;
            for (depth, label) in p.path.iter().enumerate() {
                let origin = self.objects.get(&p.path[..=depth]);
                node = node.children.entry(label.as_str()).or_default();
                node.origin = origin;
            }
            // The document is worth naming only when it is not the object's own.
            // A document made in memory (a bundle a template rendered) has no file to name.
            let message = match &p.origin {
                Some(o) if node.origin != Some(o) && !o.file.is_empty() => {
                    format!("{} ({o})", p.message)
                }
                _ => p.message.clone(),
            };
            node.messages.push(message);
        }
        f.write_str("invalid index:")?;
        write_children(f, &mut root, "")
    }
}

/// Writes sub-objects (sorted by label) before messages (sorted), as upstream nests them.
fn write_children(f: &mut fmt::Formatter<'_>, node: &mut Node, indent: &str) -> fmt::Result {
    node.messages.sort();
    let total = node.children.len() + node.messages.len();
    let mut written = 0;
    for (label, child) in &mut node.children {
        written += 1;
        let (branch, more) = if written == total {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        write!(f, "\n{indent}{branch}invalid {label}")?;
        if let Some(o) = child.origin.filter(|o| !o.file.is_empty()) {
            write!(f, " ({o})")?;
        }
        f.write_str(":")?;
        write_children(f, child, &format!("{indent}{more}"))?;
    }
    for message in &node.messages {
        written += 1;
        let branch = if written == total {
            "└── "
        } else {
            "├── "
        };
        write!(f, "\n{indent}{branch}{message}")?;
    }
    Ok(())
}

impl std::error::Error for ValidationError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn at(file: &str, line: usize) -> Origin {
        Origin {
            file: Arc::from(file),
            line,
        }
    }

    #[test]
    fn renders_a_sorted_tree_with_origins() {
        let pkg = at("foo/catalog.json", 1);
        let alpha = at("foo/catalog.json", 5);
        let bundle = at("foo/catalog.json", 12);
        let mut e = ValidationError::default();
        let foo = ("package \"foo\"".to_owned(), &pkg);
        let ch = ("channel \"alpha\"".to_owned(), &alpha);
        let b = ("bundle \"foo.v0.1.0\"".to_owned(), &bundle);
        e.add(
            std::slice::from_ref(&foo),
            Some(&pkg),
            "default channel must be set".into(),
        );
        e.add(
            &[foo.clone(), ch.clone(), b.clone()],
            Some(&bundle),
            "skip[0] is empty".into(),
        );
        e.add(
            &[foo.clone(), ch.clone()],
            Some(&alpha),
            "no channel head found in graph".into(),
        );
        e.add(
            &[],
            Some(&at("bar.yaml", 3)),
            "duplicate package \"bar\"".into(),
        );
        e.add(
            std::slice::from_ref(&foo),
            Some(&at("dep.yaml", 1)),
            "invalid deprecation: message must be set".into(),
        );
        assert_eq!(
            e.to_string(),
            "invalid index:
├── invalid package \"foo\" (foo/catalog.json:1):
│   ├── invalid channel \"alpha\" (foo/catalog.json:5):
│   │   ├── invalid bundle \"foo.v0.1.0\" (foo/catalog.json:12):
│   │   │   └── skip[0] is empty
│   │   └── no channel head found in graph
│   ├── default channel must be set
│   └── invalid deprecation: message must be set (dep.yaml:1)
└── duplicate package \"bar\" (bar.yaml:3)"
        );
        assert_eq!(e.problems.len(), 5);
        assert_eq!(
            e.problems[1].path,
            [
                "package \"foo\"",
                "channel \"alpha\"",
                "bundle \"foo.v0.1.0\""
            ]
        );
        assert_eq!(e.problems[1].origin, Some(bundle));
    }
}
