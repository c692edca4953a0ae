//! Kubernetes label selectors over catalog labels (ClusterExtension `selector`).
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<SelectorRequirement>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SelectorRequirement {
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Rejects what the Kubernetes selector conversion rejects, with its messages.
    pub(crate) fn validate(&self) -> Result<(), String> {
        for r in &self.match_expressions {
            match r.operator.as_str() {
                "In" | "NotIn" if r.values.is_empty() => {
                    return Err("for 'in', 'notin' operators, values set can't be empty".into());
                }
                "Exists" | "DoesNotExist" if !r.values.is_empty() => {
                    return Err("values set must be empty for exists and does not exist".into());
                }
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                other => {
                    return Err(format!("{other:?} is not a valid label selector operator"));
                }
            }
        }
        Ok(())
    }

    /// Whether `labels` satisfy every term; an empty selector selects everything.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| {
                let value = labels.get(&r.key);
                match r.operator.as_str() {
                    "In" => value.is_some_and(|v| r.values.contains(v)),
                    "NotIn" => value.is_none_or(|v| !r.values.contains(v)),
                    "Exists" => value.is_some(),
                    "DoesNotExist" => value.is_none(),
                    _ => false,
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators() {
        let labels = BTreeMap::from([("tier".to_owned(), "gold".to_owned())]);
        let expr = |operator: &str, values: &[&str]| LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![SelectorRequirement {
                key: "tier".into(),
                operator: operator.into(),
                values: values.iter().map(|v| (*v).to_owned()).collect(),
            }],
        };
        assert!(expr("In", &["gold"]).matches(&labels));
        assert!(!expr("NotIn", &["gold"]).matches(&labels));
        assert!(expr("Exists", &[]).matches(&labels));
        assert!(!expr("DoesNotExist", &[]).matches(&labels));
        assert!(LabelSelector::default().matches(&labels));
        assert_eq!(
            expr("bad", &["x"]).validate(),
            Err(r#""bad" is not a valid label selector operator"#.into())
        );
        assert_eq!(
            expr("In", &[]).validate(),
            Err("for 'in', 'notin' operators, values set can't be empty".into())
        );
    }
}
