//! The GraphQL query language (executable documents only): a lexer and a recursive-descent
//! parser that accept what catalogd's engine (graphql-go v0.8.1) accepts — no `null`
//! literal, type-system definitions refused — and word their syntax errors as it does:
//! `Syntax Error GraphQL (L:C) <what>` followed by the lines around the position
//! (catalogd-graphql.md §1.7). Positions are 1-based; columns count bytes.
mod lex;

use lex::{Kind, Token};

/// A position in the query text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pos {
    pub(super) line: usize,
    pub(super) column: usize,
}

#[derive(Debug)]
pub(super) struct Document {
    pub(super) operations: Vec<Operation>,
    pub(super) fragments: Vec<Fragment>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OperationKind {
    Query,
    Mutation,
    Subscription,
}

#[derive(Debug)]
pub(super) struct Operation {
    pub(super) kind: OperationKind,
    pub(super) name: Option<String>,
    pub(super) variables: Vec<VariableDefinition>,
    pub(super) directives: Vec<Directive>,
    pub(super) selection: SelectionSet,
    pub(super) pos: Pos,
}

#[derive(Debug)]
pub(super) struct VariableDefinition {
    pub(super) name: String,
    pub(super) ty: TypeName,
    pub(super) default: Option<Value>,
    pub(super) pos: Pos,
}

/// A type as a variable definition writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TypeName {
    Named(String, Pos),
    List(Box<TypeName>),
    NonNull(Box<TypeName>),
}

impl std::fmt::Display for TypeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeName::Named(name, _) => f.write_str(name),
            TypeName::List(inner) => write!(f, "[{inner}]"),
            TypeName::NonNull(inner) => write!(f, "{inner}!"),
        }
    }
}

#[derive(Debug)]
pub(super) struct SelectionSet {
    pub(super) items: Vec<Selection>,
    pub(super) pos: Pos,
}

#[derive(Debug)]
pub(super) enum Selection {
    Field(Field),
    Spread(Spread),
    Inline(InlineFragment),
}

#[derive(Debug)]
pub(super) struct Field {
    pub(super) alias: Option<String>,
    pub(super) name: String,
    pub(super) arguments: Vec<Argument>,
    pub(super) directives: Vec<Directive>,
    pub(super) selection: Option<SelectionSet>,
    pub(super) pos: Pos,
}

impl Field {
    /// The key of the field in the response.
    pub(super) fn key(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.name)
    }
}

#[derive(Debug)]
pub(super) struct Argument {
    pub(super) name: String,
    pub(super) value: Value,
    pub(super) pos: Pos,
}

#[derive(Debug)]
pub(super) struct Directive {
    pub(super) name: String,
    pub(super) arguments: Vec<Argument>,
    pub(super) pos: Pos,
}

#[derive(Debug)]
pub(super) struct Spread {
    pub(super) name: String,
    pub(super) directives: Vec<Directive>,
    pub(super) pos: Pos,
}

#[derive(Debug)]
pub(super) struct InlineFragment {
    pub(super) condition: Option<(String, Pos)>,
    pub(super) directives: Vec<Directive>,
    pub(super) selection: SelectionSet,
    pub(super) pos: Pos,
}

#[derive(Debug)]
pub(super) struct Fragment {
    pub(super) name: String,
    pub(super) condition: (String, Pos),
    pub(super) directives: Vec<Directive>,
    pub(super) selection: SelectionSet,
    pub(super) pos: Pos,
}

/// A literal value (or a variable) and where it starts.
#[derive(Debug, Clone)]
pub(super) struct Value {
    pub(super) literal: Literal,
    pub(super) pos: Pos,
}

#[derive(Debug, Clone)]
pub(super) enum Literal {
    Variable(String),
    Int(String),
    Float(String),
    String(String),
    Boolean(bool),
    Enum(String),
    List(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl std::fmt::Display for Value {
    /// As graphql-go's printer writes a value in a message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.literal {
            Literal::Variable(name) => write!(f, "${name}"),
            Literal::Int(text) | Literal::Float(text) | Literal::Enum(text) => f.write_str(text),
            Literal::String(s) => write!(f, "{}", serde_json::Value::from(s.as_str())),
            Literal::Boolean(b) => write!(f, "{b}"),
            Literal::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Literal::Object(fields) => {
                f.write_str("{")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{name}: {value}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// Why a query does not parse.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum SyntaxError {
    /// The whole message catalogd gives after `query parse error: `.
    Invalid(String),
    /// Selection sets, values or types nested deeper than [`MAX_NESTING`]: refused before
    /// the parser's recursion could exhaust its stack (catalogd's engine parses them, and
    /// its depth limit refuses the query; this answers the same for selection sets).
    TooDeep,
}

/// Nesting the parser follows, far above the depth limits of a query.
const MAX_NESTING: usize = 128;

/// Parses an executable document.
pub(super) fn parse(source: &str) -> Result<Document, SyntaxError> {
    let mut parser = Parser {
        source,
        lines: LineStarts::of(source),
        token: Token {
            kind: Kind::Eof,
            start: 0,
            value: String::new(),
        },
        end: 0,
        nesting: 0,
    };
    parser.advance()?;
    parser.document()
}

/// Where each line starts, to turn byte offsets into positions.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn of(source: &str) -> LineStarts {
        let bytes = source.as_bytes();
        let mut starts = vec![0];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                    starts.push(i + 2);
                    i += 2;
                    continue;
                }
                b'\r' | b'\n' => starts.push(i + 1),
                _ => {}
            }
            i += 1;
        }
        LineStarts(starts)
    }

    fn pos(&self, offset: usize) -> Pos {
        let line = self.0.partition_point(|&start| start <= offset);
        Pos {
            line,
            column: offset - self.0[line - 1] + 1,
        }
    }
}

struct Parser<'s> {
    source: &'s str,
    lines: LineStarts,
    token: Token,
    /// Where the previous token ended (where the next one's search starts).
    end: usize,
    /// Selection sets, values and types entered and not left.
    nesting: usize,
}

impl<'s> Parser<'s> {
    fn error(&self, offset: usize, description: &str) -> SyntaxError {
        let pos = self.lines.pos(offset);
        SyntaxError::Invalid(format!(
            "Syntax Error GraphQL ({}:{}) {description}\n\n{}",
            pos.line,
            pos.column,
            excerpt(self.source, pos)
        ))
    }

    /// Runs `f` one level deeper.
    fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, SyntaxError>,
    ) -> Result<T, SyntaxError> {
        if self.nesting >= MAX_NESTING {
            return Err(SyntaxError::TooDeep);
        }
        self.nesting += 1;
        let result = f(self);
        self.nesting -= 1;
        result
    }

    fn pos(&self) -> Pos {
        self.lines.pos(self.token.start)
    }

    fn peek(&self, kind: Kind) -> bool {
        self.token.kind == kind
    }

    fn peek_name(&self, value: &str) -> bool {
        self.token.kind == Kind::Name && self.token.value == value
    }

    /// Moves to the next token; returns the current one.
    fn advance(&mut self) -> Result<Token, SyntaxError> {
        let next = self.read_token()?;
        Ok(std::mem::replace(&mut self.token, next))
    }

    fn skip(&mut self, kind: Kind) -> Result<bool, SyntaxError> {
        let found = self.peek(kind);
        if found {
            self.advance()?;
        }
        Ok(found)
    }

    fn expect(&mut self, kind: Kind) -> Result<Token, SyntaxError> {
        if self.peek(kind) {
            return self.advance();
        }
        Err(self.error(
            self.token.start,
            &format!("Expected {}, found {}", kind.text(), self.token.describe()),
        ))
    }

    fn expect_keyword(&mut self, keyword: &str) -> Result<(), SyntaxError> {
        if self.peek_name(keyword) {
            self.advance()?;
            return Ok(());
        }
        Err(self.error(
            self.token.start,
            &format!("Expected \"{keyword}\", found {}", self.token.describe()),
        ))
    }

    fn unexpected(&self) -> SyntaxError {
        self.error(
            self.token.start,
            &format!("Unexpected {}", self.token.describe()),
        )
    }

    /// `open item+ close`.
    fn many<T>(
        &mut self,
        open: Kind,
        item: fn(&mut Self) -> Result<T, SyntaxError>,
        close: Kind,
    ) -> Result<Vec<T>, SyntaxError> {
        self.expect(open)?;
        let mut items = vec![item(self)?];
        while !self.skip(close)? {
            items.push(item(self)?);
        }
        Ok(items)
    }

    fn document(&mut self) -> Result<Document, SyntaxError> {
        let mut document = Document {
            operations: Vec::new(),
            fragments: Vec::new(),
        };
        while !self.skip(Kind::Eof)? {
            if self.peek(Kind::BraceL) {
                document.operations.push(self.operation()?);
                continue;
            }
            if self.peek(Kind::Name) {
                match self.token.value.as_str() {
                    "query" | "mutation" | "subscription" => {
                        document.operations.push(self.operation()?);
                        continue;
                    }
                    "fragment" => {
                        document.fragments.push(self.fragment_definition()?);
                        continue;
                    }
                    _ => {}
                }
            }
            return Err(self.unexpected());
        }
        Ok(document)
    }

    fn operation(&mut self) -> Result<Operation, SyntaxError> {
        let pos = self.pos();
        if self.peek(Kind::BraceL) {
            return Ok(Operation {
                kind: OperationKind::Query,
                name: None,
                variables: Vec::new(),
                directives: Vec::new(),
                selection: self.selection_set()?,
                pos,
            });
        }
        let kind = match self.expect(Kind::Name)?.value.as_str() {
            "query" => OperationKind::Query,
            "mutation" => OperationKind::Mutation,
            _ => OperationKind::Subscription,
        };
        let name = if self.peek(Kind::Name) {
            Some(self.advance()?.value)
        } else {
            None
        };
        let variables = if self.peek(Kind::ParenL) {
            self.many(Kind::ParenL, Self::variable_definition, Kind::ParenR)?
        } else {
            Vec::new()
        };
        Ok(Operation {
            kind,
            name,
            variables,
            directives: self.directives()?,
            selection: self.selection_set()?,
            pos,
        })
    }

    fn variable_definition(&mut self) -> Result<VariableDefinition, SyntaxError> {
        let pos = self.pos();
        self.expect(Kind::Dollar)?;
        let name = self.expect(Kind::Name)?.value;
        self.expect(Kind::Colon)?;
        let ty = self.type_name()?;
        let default = if self.skip(Kind::Equals)? {
            Some(self.value(true)?)
        } else {
            None
        };
        Ok(VariableDefinition {
            name,
            ty,
            default,
            pos,
        })
    }

    fn type_name(&mut self) -> Result<TypeName, SyntaxError> {
        let ty = if self.skip(Kind::BracketL)? {
            let inner = self.nested(Self::type_name)?;
            self.expect(Kind::BracketR)?;
            TypeName::List(Box::new(inner))
        } else {
            let pos = self.pos();
            TypeName::Named(self.expect(Kind::Name)?.value, pos)
        };
        Ok(if self.skip(Kind::Bang)? {
            TypeName::NonNull(Box::new(ty))
        } else {
            ty
        })
    }

    fn selection_set(&mut self) -> Result<SelectionSet, SyntaxError> {
        let pos = self.pos();
        let items = self.nested(|p| p.many(Kind::BraceL, Self::selection, Kind::BraceR))?;
        Ok(SelectionSet { items, pos })
    }

    fn selection(&mut self) -> Result<Selection, SyntaxError> {
        if self.peek(Kind::Spread) {
            self.fragment()
        } else {
            self.field().map(Selection::Field)
        }
    }

    fn field(&mut self) -> Result<Field, SyntaxError> {
        let pos = self.pos();
        let first = self.expect(Kind::Name)?.value;
        let (alias, name) = if self.skip(Kind::Colon)? {
            (Some(first), self.expect(Kind::Name)?.value)
        } else {
            (None, first)
        };
        Ok(Field {
            alias,
            name,
            arguments: self.arguments()?,
            directives: self.directives()?,
            selection: if self.peek(Kind::BraceL) {
                Some(self.selection_set()?)
            } else {
                None
            },
            pos,
        })
    }

    fn arguments(&mut self) -> Result<Vec<Argument>, SyntaxError> {
        if !self.peek(Kind::ParenL) {
            return Ok(Vec::new());
        }
        self.many(Kind::ParenL, Self::argument, Kind::ParenR)
    }

    fn argument(&mut self) -> Result<Argument, SyntaxError> {
        let pos = self.pos();
        let name = self.expect(Kind::Name)?.value;
        self.expect(Kind::Colon)?;
        Ok(Argument {
            name,
            value: self.value(false)?,
            pos,
        })
    }

    fn directives(&mut self) -> Result<Vec<Directive>, SyntaxError> {
        let mut directives = Vec::new();
        while self.peek(Kind::At) {
            let pos = self.pos();
            self.advance()?;
            let name = self.expect(Kind::Name)?.value;
            directives.push(Directive {
                name,
                arguments: self.arguments()?,
                pos,
            });
        }
        Ok(directives)
    }

    fn fragment(&mut self) -> Result<Selection, SyntaxError> {
        let pos = self.pos();
        self.expect(Kind::Spread)?;
        if self.peek(Kind::Name) && self.token.value != "on" {
            let name = self.advance()?.value;
            return Ok(Selection::Spread(Spread {
                name,
                directives: self.directives()?,
                pos,
            }));
        }
        let condition = if self.peek_name("on") {
            self.advance()?;
            let at = self.pos();
            Some((self.expect(Kind::Name)?.value, at))
        } else {
            None
        };
        Ok(Selection::Inline(InlineFragment {
            condition,
            directives: self.directives()?,
            selection: self.selection_set()?,
            pos,
        }))
    }

    fn fragment_definition(&mut self) -> Result<Fragment, SyntaxError> {
        let pos = self.pos();
        self.expect_keyword("fragment")?;
        if self.peek_name("on") {
            return Err(self.unexpected());
        }
        let name = self.expect(Kind::Name)?.value;
        self.expect_keyword("on")?;
        let at = self.pos();
        let condition = (self.expect(Kind::Name)?.value, at);
        Ok(Fragment {
            name,
            condition,
            directives: self.directives()?,
            selection: self.selection_set()?,
            pos,
        })
    }

    /// A value; `constant` refuses variables (defaults of variables).
    fn value(&mut self, constant: bool) -> Result<Value, SyntaxError> {
        self.nested(|p| p.value_here(constant))
    }

    fn value_here(&mut self, constant: bool) -> Result<Value, SyntaxError> {
        let pos = self.pos();
        let literal = match self.token.kind {
            Kind::BracketL => {
                self.advance()?;
                let mut items = Vec::new();
                while !self.skip(Kind::BracketR)? {
                    items.push(self.value(constant)?);
                }
                Literal::List(items)
            }
            Kind::BraceL => {
                self.advance()?;
                let mut fields = Vec::new();
                while !self.skip(Kind::BraceR)? {
                    let name = self.expect(Kind::Name)?.value;
                    self.expect(Kind::Colon)?;
                    fields.push((name, self.value(constant)?));
                }
                Literal::Object(fields)
            }
            Kind::Int => Literal::Int(self.advance()?.value),
            Kind::Float => Literal::Float(self.advance()?.value),
            Kind::String | Kind::BlockString => Literal::String(self.advance()?.value),
            Kind::Name if self.token.value == "true" || self.token.value == "false" => {
                Literal::Boolean(self.advance()?.value == "true")
            }
            // graphql-go v0.8.1 has no null literal.
            Kind::Name if self.token.value != "null" => Literal::Enum(self.advance()?.value),
            Kind::Dollar if !constant => {
                self.advance()?;
                Literal::Variable(self.expect(Kind::Name)?.value)
            }
            _ => return Err(self.unexpected()),
        };
        Ok(Value { literal, pos })
    }
}

/// The lines around `pos`, numbered, with a caret under the column (graphql-go's
/// `highlightSourceAtLocation`).
fn excerpt(source: &str, pos: Pos) -> String {
    let lines: Vec<&str> = source
        .split("\r\n")
        .flat_map(|l| l.split(['\n', '\r']))
        .collect();
    let width = (pos.line + 1).to_string().len();
    let mut out = String::new();
    let numbered = |n: usize, out: &mut String| {
        out.push_str(&format!(
            "{:>width$}: {}\n",
            n,
            printable(lines.get(n - 1).copied().unwrap_or(""))
        ));
    };
    if pos.line >= 2 {
        numbered(pos.line - 1, &mut out);
    }
    numbered(pos.line, &mut out);
    out.push_str(&" ".repeat(1 + width + pos.column));
    out.push_str("^\n");
    if pos.line < lines.len() {
        numbered(pos.line + 1, &mut out);
    }
    out
}

fn printable(line: &str) -> String {
    line.chars()
        .map(|c| {
            if c < ' ' && c != '\t' {
                format!("\\u{:04X}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(source: &str) -> String {
        match parse(source).unwrap_err() {
            SyntaxError::Invalid(message) => message,
            SyntaxError::TooDeep => "too deep".into(),
        }
    }

    #[test]
    fn syntax_errors_are_worded_as_graphql_go_words_them() {
        assert_eq!(
            error("{"),
            "Syntax Error GraphQL (1:2) Expected Name, found EOF\n\n1: {\n    ^\n"
        );
        assert_eq!(
            error("{ olmpackages(limit: null) { name } }"),
            "Syntax Error GraphQL (1:22) Unexpected Name \"null\"\n\n1: { olmpackages(limit: null) { name } }\n                        ^\n"
        );
        assert_eq!(
            error("query {\n  a\n  b(\n}\n"),
            "Syntax Error GraphQL (4:1) Expected Name, found }\n\n3:   b(\n4: }\n   ^\n5: \n"
        );
        assert_eq!(
            error("{ a ? }"),
            "Syntax Error GraphQL (1:5) Unexpected character \"?\".\n\n1: { a ? }\n       ^\n"
        );
        assert!(error("{ a(x: \"open) }").contains("Unterminated string."));
        assert!(error("type A { a: String }").contains("Unexpected Name \"type\""));
        assert_eq!(error(&"{ a ".repeat(10_000)), "too deep");
        assert_eq!(
            error(&format!("{{ a(x: {}) }}", "[".repeat(10_000))),
            "too deep"
        );
    }

    #[test]
    fn documents_parse_with_positions() {
        let doc = parse(
            "# c\nquery Q($n: [Int!] = [1, 2]) { a: f(x: $n, s: \"\\u0041\", o: {k: E}) @skip(if: false) { ...F ... on T { g } } }\nfragment F on T { h }",
        )
        .unwrap();
        assert_eq!(doc.operations.len(), 1);
        assert_eq!(doc.fragments.len(), 1);
        let op = &doc.operations[0];
        assert_eq!(op.pos, Pos { line: 2, column: 1 });
        assert_eq!(op.variables[0].ty.to_string(), "[Int!]");
        assert_eq!(
            op.variables[0].default.as_ref().unwrap().to_string(),
            "[1, 2]"
        );
        let Selection::Field(f) = &op.selection.items[0] else {
            panic!()
        };
        assert_eq!((f.key(), f.name.as_str()), ("a", "f"));
        assert_eq!(
            f.pos,
            Pos {
                line: 2,
                column: 32
            }
        );
        let printed: Vec<String> = f.arguments.iter().map(|a| a.value.to_string()).collect();
        assert_eq!(printed, ["$n", "\"A\"", "{k: E}"]);
        assert_eq!(f.directives[0].name, "skip");
        assert_eq!(f.selection.as_ref().unwrap().items.len(), 2);
        // Blank documents parse (and are refused later, as having no operation).
        assert!(parse(" \n# only a comment").unwrap().operations.is_empty());
        assert_eq!(
            parse("{ a(s: \"\"\"\n    x\n      y\n  \"\"\") }").map(|d| {
                let Selection::Field(f) = &d.operations[0].selection.items[0] else {
                    panic!()
                };
                f.arguments[0].value.to_string()
            }),
            Ok("\"x\\n  y\"".to_owned())
        );
    }
}
