//! The CEL environment of `olm.constraint` `cel` rules (resolution spec §6.3): one declared
//! variable `properties` (the candidate bundle's properties as `{type, value}` maps) and the
//! custom function `semver_compare`. The `cel` crate only interprets, so the static part of
//! cel-go's check that upstream relies on (declared names, a boolean result) is done here on
//! the parsed tree.
use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, operators};
use cel::extractors::Arguments;
use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, Program, Value};

use catalog::semver::Version;
use catalog::types::Property;

use super::predicate::decode;

const PROPERTIES: &str = "properties";
const SEMVER_COMPARE: &str = "semver_compare";

/// Functions (and operators, by their internal names) a rule may call: the standard library
/// that upstream's environment has, plus `semver_compare`. Macros are expanded by the parser.
const KNOWN_FUNCTIONS: &[&str] = &[
    operators::CONDITIONAL,
    operators::LOGICAL_AND,
    operators::LOGICAL_OR,
    operators::LOGICAL_NOT,
    operators::SUBSTRACT,
    operators::ADD,
    operators::MULTIPLY,
    operators::DIVIDE,
    operators::MODULO,
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::GREATER_EQUALS,
    operators::LESS_EQUALS,
    operators::GREATER,
    operators::LESS,
    operators::NEGATE,
    operators::INDEX,
    operators::NOT_STRICTLY_FALSE,
    operators::IN,
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "dyn",
    "type",
    SEMVER_COMPARE,
];

/// Calls whose result is a boolean whatever their arguments.
const BOOLEAN_FUNCTIONS: &[&str] = &[
    operators::LOGICAL_AND,
    operators::LOGICAL_OR,
    operators::LOGICAL_NOT,
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::GREATER_EQUALS,
    operators::LESS_EQUALS,
    operators::GREATER,
    operators::LESS,
    operators::NOT_STRICTLY_FALSE,
    operators::IN,
    "contains",
    "startsWith",
    "endsWith",
    "matches",
];

/// Deepest nesting a rule may have, in brackets of its text and in levels of its tree.
/// The `cel` crate parses and evaluates recursively, so a catalog could otherwise crash
/// the server with a rule like `((((…))))`; real rules nest a handful of levels.
const MAX_NESTING: usize = 32;

/// The parser runs on its own thread with this much stack: its frames are large, and the
/// depth it reaches is bounded by [`MAX_NESTING`] only after the bracket check.
const PARSER_STACK: usize = 64 << 20;

/// A compiled rule, ready to be evaluated against many candidate bundles.
#[derive(Debug)]
pub struct CelRule {
    program: Program,
}

impl CelRule {
    /// Parses and checks `rule`. Errors are compile errors, which make the whole resolution
    /// fail (§2.7), unlike evaluation errors.
    pub fn compile(rule: &str) -> Result<CelRule, String> {
        if bracket_depth(rule) > MAX_NESTING {
            return Err(format!(
                "cel expression nests deeper than {MAX_NESTING} levels"
            ));
        }
        // A tree that is too deep is also dropped on the large stack: dropping recurses.
        let program = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(PARSER_STACK)
                .spawn_scoped(scope, || {
                    let program = Program::compile(rule).map_err(|e| e.to_string())?;
                    if tree_depth(program.expression()) > MAX_NESTING {
                        return Err(format!(
                            "cel expression nests deeper than {MAX_NESTING} levels"
                        ));
                    }
                    Ok(program)
                })
                .map_err(|e| format!("cannot start the cel parser: {e}"))?
                .join()
                .map_err(|_| "the cel parser failed".to_owned())?
        })
        .map_err(|e| e.trim().to_owned())?;
        check_names(program.expression(), &mut vec![PROPERTIES.to_owned()])?;
        if !is_boolean(program.expression()) {
            return Err("cel expressions must have type Bool".to_owned());
        }
        Ok(CelRule { program })
    }

    /// Whether the rule holds for a bundle with `properties`. An evaluation error or a
    /// non-boolean result means "does not match", never an error (§6.3).
    pub fn matches(&self, properties: &[Property]) -> bool {
        self.matches_decoded(properties, &decode(properties))
    }

    /// [`CelRule::matches`] with the property values already decoded by [`decode`].
    pub(crate) fn matches_decoded(
        &self,
        properties: &[Property],
        values: &[Option<serde_json::Value>],
    ) -> bool {
        let mut context = Context::default();
        context.add_variable_from_value(PROPERTIES, properties_value(properties, values));
        if context
            .add_function(SEMVER_COMPARE, |Arguments(args): Arguments| {
                semver_compare(&args)
            })
            .is_err()
        {
            return false;
        }
        matches!(self.program.execute(&context), Ok(Value::Bool(true)))
    }
}

/// The deepest bracket nesting of `rule` outside string literals.
fn bracket_depth(rule: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in rule.chars() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(_) if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    deepest
}

/// The depth of the parsed tree, computed without recursion since it is not bounded yet.
fn tree_depth(root: &IdedExpr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((e, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        stack.extend(children(e).into_iter().map(|c| (c, depth + 1)));
    }
    deepest
}

fn entry_children(entry: &IdedEntryExpr) -> Vec<&IdedExpr> {
    match &entry.expr {
        EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
        EntryExpr::StructField(f) => vec![&f.value],
    }
}

fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(&call.args)
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map.entries.iter().flat_map(entry_children).collect(),
        Expr::Struct(st) => st.entries.iter().flat_map(entry_children).collect(),
        Expr::Select(select) => vec![&select.operand],
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

/// Every identifier must be `properties` or a comprehension variable in scope, and every
/// function known: cel-go rejects anything else at compile time.
fn check_names(e: &IdedExpr, scope: &mut Vec<String>) -> Result<(), String> {
    match &e.expr {
        Expr::Ident(name) if scope.iter().any(|s| s == name) => Ok(()),
        Expr::Ident(name) => Err(format!("undeclared reference to '{name}'")),
        Expr::Call(call) => {
            if !KNOWN_FUNCTIONS.contains(&call.func_name.as_str()) {
                return Err(format!("undeclared reference to '{}'", call.func_name));
            }
            if let Some(target) = &call.target {
                check_names(target, scope)?;
            }
            call.args.iter().try_for_each(|a| check_names(a, scope))
        }
        Expr::Comprehension(c) => {
            check_names(&c.iter_range, scope)?;
            check_names(&c.accu_init, scope)?;
            let depth = scope.len();
            scope.push(c.iter_var.clone());
            scope.extend(c.iter_var2.clone());
            scope.push(c.accu_var.clone());
            let result = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .try_for_each(|x| check_names(x, scope));
            scope.truncate(depth);
            result
        }
        Expr::List(list) => list.elements.iter().try_for_each(|x| check_names(x, scope)),
        Expr::Map(map) => map.entries.iter().try_for_each(|entry| match &entry.expr {
            EntryExpr::MapEntry(m) => {
                check_names(&m.key, scope)?;
                check_names(&m.value, scope)
            }
            EntryExpr::StructField(f) => check_names(&f.value, scope),
        }),
        Expr::Select(select) => check_names(&select.operand, scope),
        Expr::Struct(_) => Err("message construction is not supported".to_owned()),
        Expr::Literal(_) | Expr::Unspecified => Ok(()),
    }
}

/// The §6.3 subset of cel-go's type check: is the expression's static type `bool`?
fn is_boolean(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Literal(LiteralValue::Boolean(_)) => true,
        Expr::Call(call) if call.func_name == operators::CONDITIONAL => {
            call.args.len() == 3 && is_boolean(&call.args[1]) && is_boolean(&call.args[2])
        }
        Expr::Call(call) => BOOLEAN_FUNCTIONS.contains(&call.func_name.as_str()),
        // `has(x.f)`.
        Expr::Select(select) => select.test,
        // `all`/`exists` accumulate a boolean; `exists_one` compares its count at the end;
        // `map`/`filter` build lists.
        Expr::Comprehension(c) => is_boolean(&c.accu_init) || is_boolean(&c.result),
        _ => false,
    }
}

/// The activation of §6.3: one `{type, value}` map per property, values JSON-decoded with
/// every number a double; a value that is not JSON becomes null.
fn properties_value(properties: &[Property], values: &[Option<serde_json::Value>]) -> Value {
    let list = properties
        .iter()
        .zip(values)
        .map(|(p, value)| match value {
            Some(value) => {
                let mut map = HashMap::with_capacity(2);
                map.insert(Key::from("type"), Value::from(p.kind.as_str()));
                map.insert(Key::from("value"), json_value(value));
                Value::Map(Map { map: Arc::new(map) })
            }
            None => Value::Null,
        })
        .collect();
    Value::List(Arc::new(list))
}

fn json_value(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(json_value).collect()))
        }
        serde_json::Value::Object(fields) => {
            let map = fields
                .iter()
                .map(|(k, v)| (Key::from(k.as_str()), json_value(v)))
                .collect::<HashMap<_, _>>();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

/// `semver_compare(a, b)`: -1, 0 or 1 by precedence of the two tolerantly parsed versions.
fn semver_compare(args: &[Value]) -> Result<Value, ExecutionError> {
    let [a, b] = args else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    let a = parse_argument(a)?;
    let b = parse_argument(b)?;
    Ok(Value::Int(a.cmp(&b) as i64))
}

fn parse_argument(v: &Value) -> Result<Version, ExecutionError> {
    let text = match v {
        Value::String(s) => s.to_string(),
        // Go prints a float64 in its shortest form, so `1.0` reads as `1`.
        Value::Float(f) => f.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    };
    Version::parse_tolerant(&text).map_err(|_| {
        ExecutionError::function_error(
            SEMVER_COMPARE,
            format!("unable to parse '{text}' to semver format"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::CelRule;
    use catalog::types::Property;

    fn props(pairs: &[(&str, &str)]) -> Vec<Property> {
        pairs
            .iter()
            .map(|(k, v)| Property {
                kind: (*k).to_owned(),
                value: (*v).to_owned(),
            })
            .collect()
    }

    #[test]
    fn library_functions_and_semver_compare() {
        let p = props(&[("olm.test", r#""1.0.0""#)]);
        let eval = |rule: &str| CelRule::compile(rule).expect(rule).matches(&p);
        let exists = |cmp: &str| {
            format!("properties.exists(p, p.type == 'olm.test' && (semver_compare(p.value, {cmp}))")
        };
        assert!(eval(&exists("'1.0.0') == 0")));
        assert!(!eval(&exists("'1.0.1') == 0")));
        assert!(!eval(&exists("'1.0.0') < 0")));
        assert!(!eval(&exists("'1.0.0') > 0")));
        assert!(eval("semver_compare('v1.0', '1.0.0') == 0"));
        assert!(eval("semver_compare('1.0.0+build', '1.0.0') == 0"));
        assert!(eval("semver_compare('1.0.0-rc.1', '1.0.0') < 0"));
        assert!(eval("semver_compare(1.0, '1.0.0') == 0"));
        assert!(eval("properties.exists_one(p, p.type.startsWith('olm.'))"));
        assert!(eval("has(properties[0].type) ? true : false"));
        assert!(!eval("properties.all(p, p.type == 'other')"));
    }

    #[test]
    fn deep_map_equality_on_values() {
        let p = props(&[("olm.gvk", r#"{"group":"g","kind":"k","version":"v"}"#)]);
        let rule = "properties.exists(p, p.type == 'olm.gvk' && p.value == {'group': 'g', 'version': 'v', 'kind': 'k'})";
        assert!(CelRule::compile(rule).expect("valid").matches(&p));
        assert!(!CelRule::compile(rule).expect("valid").matches(&props(&[])));
    }

    #[test]
    fn evaluation_errors_mean_no_match() {
        let p = props(&[("olm.test", r#""not-a-version""#), ("bad", "{")]);
        let rule = CelRule::compile(
            "properties.exists(p, p.type == 'olm.test' && semver_compare(p.value, '1.0.0') == 0)",
        )
        .expect("valid");
        assert!(!rule.matches(&p));
        let null_slot = CelRule::compile("properties[1].type == 'bad'").expect("valid");
        assert!(!null_slot.matches(&p));
    }

    #[test]
    fn compile_errors() {
        let err = |rule: &str| CelRule::compile(rule).expect_err(rule);
        assert_eq!(
            err(
                "properties.exists(p, p.type == 'olm.test' && (doesnt_exist(p.value, '1.0.0') == 0))"
            ),
            "undeclared reference to 'doesnt_exist'"
        );
        assert_eq!(err("1"), "cel expressions must have type Bool");
        assert_eq!(
            err("properties[0].value.flag"),
            "cel expressions must have type Bool"
        );
        assert_eq!(
            err("properties.map(p, p.type)"),
            "cel expressions must have type Bool"
        );
        assert_eq!(err("nope == 1"), "undeclared reference to 'nope'");
        assert!(!err("properties.exists(").is_empty());
    }

    #[test]
    fn arithmetic_and_regex_errors_do_not_match() {
        for rule in [
            "1 / 0 == 1",
            "9223372036854775807 + 1 == 0",
            "-9223372036854775808 / -1 == 1",
            "-9223372036854775808 % -1 == 0",
            "properties[5].type == 'x'",
            "'a'.matches('(')",
            "size(properties) / 0 == 0",
            "int('x') == 1",
            "18446744073709551615u + 1u == 0u",
            "int(1e100) == 1",
            "semver_compare('1.0.0') == 0",
        ] {
            assert!(!CelRule::compile(rule).expect(rule).matches(&[]), "{rule}");
        }
    }

    /// Deep rules from a catalog must be refused, never overflow the stack.
    #[test]
    fn nesting_is_bounded() {
        let too_deep = "cel expression nests deeper than 32 levels";
        let err = |rule: &str| CelRule::compile(rule).expect_err(rule);
        assert_eq!(
            err(&format!("{}true{}", "(".repeat(33), ")".repeat(33))),
            too_deep
        );
        assert_eq!(err(&"(".repeat(100_000)), too_deep);
        assert_eq!(err(&format!("{}1 == 1", "1 + ".repeat(16_000))), too_deep);
        assert_eq!(err(&format!("properties{}", ".a".repeat(30_000))), too_deep);
        // Brackets inside string literals do not count.
        let quoted = format!("'{}' == 'x'", "(".repeat(100));
        assert!(!CelRule::compile(&quoted).expect("valid").matches(&[]));
        let deepest = format!("{}1 == 1", "1 + ".repeat(29));
        assert!(!CelRule::compile(&deepest).expect("31 levels").matches(&[]));
        let long_and = format!("{}true", "true && ".repeat(16_000));
        assert!(CelRule::compile(&long_and).expect("balanced").matches(&[]));
    }
}
