use super::{GaveUp, parse};
use crate::decode::yaml_stream::libyaml;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The fast reader either gives up or agrees with libyaml.
fn agrees(doc: &str) -> Option<Value> {
    let fast = parse(doc.as_bytes()).ok();
    if let Some(value) = &fast {
        let slow = libyaml(doc.as_bytes())
            .unwrap_or_else(|e| panic!("fast reader accepted what libyaml refuses ({e}):\n{doc}"));
        assert_eq!(value, &slow, "differs from libyaml:\n{doc}");
    }
    fast
}

#[track_caller]
fn reads(doc: &str, expected: Value) {
    assert_eq!(agrees(doc), Some(expected), "{doc}");
}

#[track_caller]
fn leaves_to_libyaml(doc: &str) {
    assert_eq!(parse(doc.as_bytes()), Err(GaveUp::Unknown), "{doc}");
}

#[test]
fn block_collections() {
    reads(
        "a: 1\nb:\n  c: x\n  d:\n  - p\n  - q: r\n    s: t\n  -\n    - u\n  - - v\n    - w\ne:\n",
        json!({"a": 1, "b": {"c": "x", "d": ["p", {"q": "r", "s": "t"}, ["u"], ["v", "w"]]}, "e": null}),
    );
    reads("- a\n- b: c\n  d: e\n", json!(["a", {"b": "c", "d": "e"}]));
    reads(
        "---\n# c\nkind: K # trailing\nspec:\n  x: y\n\n...\nnot: read\n",
        json!({"kind": "K", "spec": {"x": "y"}}),
    );
    reads("a: 1\n---\nb: 2\n", json!({"a": 1}));
    reads("  indented: root\n", json!({"indented": "root"}));
}

#[test]
fn scalars_resolve_as_libyaml_does() {
    reads(
        "a: true\nb: False\nc: ~\nd: null\ne: 012\nf: 0x1F\ng: 1.5\nh: -3\ni: 1.2.3\nk: yes\nl: nan\nm: '1'\nn: +1\no: 1e3\np: 2024-01-01\nq: -x\nr: .5\n",
        json!({"a": true, "b": false, "c": null, "d": null, "e": "012", "f": 31, "g": 1.5, "h": -3,
               "i": "1.2.3", "k": "yes", "l": "nan", "m": "1", "n": 1, "o": 1000.0,
               "p": "2024-01-01", "q": "-x", "r": 0.5}),
    )
}

#[test]
fn infinite_floats_go_to_libyaml_and_fail_there() {
    assert_eq!(parse(b"j: .inf\n"), Err(GaveUp::Unknown));
}

#[test]
fn multi_line_scalars_fold() {
    reads(
        "d: 'APIVersion defines\n  the schema. It''s\n\n  versioned'\ne: plain text\n  goes on\n\n\n  and on\nf: \"esc\\taped \\\"q\\\"\n  line \\\n  joined \\u00e9\"\n",
        json!({"d": "APIVersion defines the schema. It's\nversioned",
               "e": "plain text goes on\n\nand on",
               "f": "esc\taped \"q\" line joined é"}),
    );
    reads("- a\n  b\n- c\n", json!(["a b", "c"]));
    reads(
        "d: based on:\\n\n  - first {k,v}\n  \"quoted\" `code`\n",
        json!({"d": "based on:\\n - first {k,v} \"quoted\" `code`"}),
    );
}

#[test]
fn literal_block_scalars() {
    reads(
        "a: |\n  line 1\n    more\n\n  # not a comment\nb: |-\n  stripped\n\nc: |+\n  kept\n\n\nd: x\n",
        json!({"a": "line 1\n  more\n\n# not a comment\n", "b": "stripped", "c": "kept\n\n\n", "d": "x"}),
    );
    reads("- |\n  in a list\n- x\n", json!(["in a list\n", "x"]));
    reads("a: |+\n  end\n\n", json!({"a": "end\n\n"}));
    reads("a: |+\n  end\n\n---\n", json!({"a": "end\n\n"}));
    reads("a: |\n  end\n---\n", json!({"a": "end\n"}));
    leaves_to_libyaml("a: |\n  unterminated");
}

#[test]
fn flow_collections_on_one_line() {
    reads(
        "verbs: [\"get\", list, 'watch']\ne: []\nm: {}\nn: {a: 1, b: [x, {c: d}]} # c\n",
        json!({"verbs": ["get", "list", "watch"], "e": [], "m": {}, "n": {"a": 1, "b": ["x", {"c": "d"}]}}),
    );
    reads(
        "\"quoted key\": 'v'\n'it''s': \"w\"\n",
        json!({"quoted key": "v", "it's": "w"}),
    );
}

#[test]
fn everything_else_is_left_to_libyaml() {
    for doc in [
        "a: &x 1\nb: *x\n",
        "a: !tag 1\n",
        "a: >\n  folded\n",
        "a: |2\n   indented\n",
        "a:\tb\n",
        "a: b\r\n",
        "? complex\n: key\n",
        "a: 1\na: 2\n",
        "1: one\n",
        "a: [1,\n  2]\n",
        "a: [x, ]\n",
        "%YAML 1.2\n---\na: 1\n",
        "--- a: 1\n",
        "just a scalar\n",
        "a: b: c\n",
        "a: x\n  b: y\n",
        "a:\n  scalar on its own line\n",
        "a: 'unterminated\n",
        "a: - b\n",
        "a: \"\\q\"\n",
        "<<: {a: 1}\n",
        "a: x\n # comment\n  y\n",
        "a: |\n    \n  less indented\n",
        "- a\nb: c\n",
        "a: 1\n b: 2\n",
        "a: [b: c]\n",
        "a: [b#c]\n",
        "a: ...\n",
        "a: ---\n",
    ] {
        let fast = agrees(doc);
        assert_eq!(fast, None, "{doc}");
    }
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let path = e.path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if matches!(
            path.extension().and_then(|x| x.to_str()),
            Some("yaml" | "yml")
        ) {
            out.push(path);
        }
    }
}

/// Every document of every YAML file in the corpora: the fast reader agrees with libyaml
/// whenever it answers, and it answers for every manifest of the real bundles (which is
/// what makes rendering fast).
#[test]
fn agrees_with_libyaml_on_the_corpora() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/testdata");
    if !shared.is_dir() {
        eprintln!("SKIPPED: {} is absent", shared.display());
    }
    let mut files = Vec::new();
    for dir in [shared.clone(), root.join("tests"), root.join("examples")] {
        yaml_files(&dir, &mut files);
    }
    let (mut answered, mut documents) = (0, 0);
    let mut missed_in_real_bundles = Vec::new();
    for file in &files {
        let data = std::fs::read(file).expect("readable");
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        let docs: Vec<&str> = text.split("\n---\n").collect();
        for doc in &docs {
            documents += 1;
            if agrees(doc).is_some() {
                answered += 1;
            } else if file.starts_with(shared.join("real/bundles"))
                && libyaml(doc.as_bytes()).is_ok()
            {
                missed_in_real_bundles.push(file.display().to_string());
            }
        }
    }
    eprintln!("fast reader answered {answered} of {documents} documents");
    assert_eq!(missed_in_real_bundles, Vec::<String>::new());
}

/// A small deterministic generator of YAML-like text built from the pieces that make block
/// YAML tricky: odd indentation, comments, colons and hashes inside scalars, quotes, folds,
/// block scalar headers, flows, things that look like numbers. Whatever it makes, the fast
/// reader must either give up or agree with libyaml.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'p>(&mut self, from: &[&'p str]) -> &'p str {
        from[(self.next() % from.len() as u64) as usize]
    }

    fn scalar(&mut self) -> String {
        const PIECES: &[&str] = &[
            "a",
            "b c",
            "x:y",
            "x: y",
            "p #q",
            "p#q",
            "'s'",
            "'it''s'",
            "\"d\\\"q\"",
            "\"\\u00e9\\t\"",
            "1",
            "-1",
            "+2",
            "0x1F",
            "012",
            "1.5",
            "1e3",
            ".inf",
            "~",
            "null",
            "True",
            "yes",
            "-",
            "- x",
            "[a, b]",
            "{k: v}",
            "[]",
            "{}",
            "[a, ]",
            "{a: [b, {c: d}]}",
            "|",
            "|-",
            "|+",
            ">",
            "&a x",
            "*a",
            "!t x",
            "`c`",
            "@x",
            "%x",
            "?x",
            "? x",
            ":x",
            "...",
            "---",
            "'open",
            "\"open",
            "a  b",
            "v # c",
            "2024-01-01",
            "1.2.3",
            "\"x\\",
            "'x'y",
            "<<",
        ];
        let mut s = self.pick(PIECES).to_owned();
        if self.next().is_multiple_of(4) {
            s.push(' ');
            s.push_str(self.pick(PIECES));
        }
        s
    }

    fn document(&mut self) -> String {
        const KEYS: &[&str] = &[
            "a", "b", "key", "'q k'", "\"d k\"", "1", "x y", "-", "- a", "? a", "a#b",
        ];
        let mut out = String::new();
        let lines = 1 + self.next() % 10;
        for _ in 0..lines {
            let indent = [0, 0, 0, 1, 2, 2, 4, 6][(self.next() % 8) as usize];
            out.push_str(&" ".repeat(indent));
            match self.next() % 9 {
                0 => out.push_str(&format!("- {}", self.scalar())),
                1 => out.push('-'),
                2 => out.push_str(&format!("{}:", self.pick(KEYS))),
                3 => out.push_str(&format!("- {}: {}", self.pick(KEYS), self.scalar())),
                4 => out.push_str(&format!("# {}", self.scalar())),
                5 => {}
                6 => out.push_str(&self.scalar()),
                _ => out.push_str(&format!("{}: {}", self.pick(KEYS), self.scalar())),
            }
            out.push('\n');
        }
        if self.next().is_multiple_of(5) {
            out.pop();
        }
        out
    }

    /// Well-nested collections (so that most documents are valid) with the scalars above,
    /// folded continuation lines and literal bodies.
    fn nested(&mut self, indent: usize, depth: u32, out: &mut String) {
        const KEYS: &[&str] = &["a", "b", "key", "'q k'", "\"d\"", "x y", "k2"];
        let sequence = self.next().is_multiple_of(2);
        for i in 0..1 + self.next() % 3 {
            out.push_str(&" ".repeat(indent));
            let child = if sequence {
                out.push_str("- ");
                indent + 2
            } else {
                out.push_str(KEYS[(i as usize + self.next() as usize % 2) % KEYS.len()]);
                out.push(':');
                indent + [1, 2, 4][(self.next() % 3) as usize]
            };
            match self.next() % 6 {
                0 if depth < 3 => {
                    out.push('\n');
                    self.nested(child, depth + 1, out);
                }
                1 => {
                    out.push_str(if sequence { "|" } else { " |" });
                    out.push_str(self.pick(&["", "-", "+"]));
                    out.push('\n');
                    for _ in 0..1 + self.next() % 3 {
                        let extra = self.pick(&["", "", " ", "  "]);
                        out.push_str(&format!("{}{extra}{}\n", " ".repeat(child), self.scalar()));
                    }
                    if self.next().is_multiple_of(2) {
                        out.push('\n');
                    }
                }
                2 => {
                    out.push_str(&format!(
                        "{}{}\n",
                        if sequence { "" } else { " " },
                        self.scalar()
                    ));
                    if self.next().is_multiple_of(2) {
                        out.push('\n');
                    }
                    out.push_str(&format!("{}{}\n", " ".repeat(child), self.scalar()));
                }
                _ => out.push_str(&format!(
                    "{}{}\n",
                    if sequence { "" } else { " " },
                    self.scalar()
                )),
            }
        }
    }
}

#[test]
fn agrees_with_libyaml_on_generated_documents() {
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    let mut answered = 0;
    for round in 0..40_000u32 {
        let doc = if round.is_multiple_of(2) {
            noise.document()
        } else {
            let mut doc = String::new();
            noise.nested(0, 0, &mut doc);
            doc
        };
        if agrees(&doc).is_some() {
            answered += 1;
        }
    }
    // The generator must keep reaching the fast path, or the test proves nothing.
    assert!(answered > 2_000, "only {answered} documents answered");
}

/// `levels` nested collections: block mappings, compact block sequences, or flow sequences.
fn nested(kind: &str, levels: usize) -> String {
    match kind {
        "block" => (0..levels)
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect(),
        "compact" => format!("v:\n{}x\n", "- ".repeat(levels - 1)),
        _ => format!("v: {}{}\n", "[".repeat(levels - 1), "]".repeat(levels - 1)),
    }
}

#[test]
fn nesting_is_read_to_the_limit_and_refused_past_it_with_its_line() {
    use crate::decode::MAX_DEPTH;
    for kind in ["block", "compact", "flow"] {
        let at_limit = nested(kind, MAX_DEPTH);
        assert!(agrees(&at_limit).is_some(), "{kind}");
        let expected_line = match kind {
            "block" => MAX_DEPTH + 1,
            "compact" => 2,
            _ => 1,
        };
        for levels in [MAX_DEPTH + 1, 100_000] {
            if kind == "block" && levels > MAX_DEPTH + 1 {
                continue; // quadratic in size; the limit is what matters
            }
            let doc = nested(kind, levels);
            assert_eq!(
                parse(doc.as_bytes()),
                Err(GaveUp::TooDeep(expected_line)),
                "{kind} {levels}"
            );
        }
        let past = nested(kind, MAX_DEPTH + 1);
        let e = libyaml(past.as_bytes()).expect_err("libyaml refuses it too");
        assert!(
            e.to_string()
                .contains(": nesting deeper than 100 levels at line "),
            "{kind}: {e}"
        );
    }
}
