//! A small ordered builder for CloudFormation templates: YAML mappings keep
//! the order they are written in (`AWSTemplateFormatVersion`, `Description`,
//! `Parameters`, …, as the AWS documentation lays a template out), and the
//! intrinsic functions are written in their long form (`Ref:`, `Fn::Sub:`),
//! which every YAML reader parses alike (the short `!Sub` tags are a
//! CloudFormation extension of YAML). Reference: AWS CloudFormation User
//! Guide, "Template anatomy" and "Intrinsic function reference".

use serde_yaml_ng::{Mapping, Value};

/// A mapping from `(key, value)` pairs, in order.
pub fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    let mut m = Mapping::new();
    for (k, v) in pairs {
        m.insert(Value::String(k.to_string()), v);
    }
    Value::Mapping(m)
}

/// A mapping from owned pairs, in order.
pub fn map_of(pairs: Vec<(String, Value)>) -> Value {
    let mut m = Mapping::new();
    for (k, v) in pairs {
        m.insert(Value::String(k), v);
    }
    Value::Mapping(m)
}

/// A string scalar.
pub fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

/// A number scalar.
pub fn n(v: i64) -> Value {
    Value::Number(v.into())
}

/// A sequence.
pub fn list(items: Vec<Value>) -> Value {
    Value::Sequence(items)
}

/// `Ref: name` (a parameter's value or a resource's id).
pub fn r(name: &str) -> Value {
    map([("Ref", s(name))])
}

/// `Fn::Sub: text` (`${Name}` and `${Resource.Attribute}` substituted).
pub fn sub(text: &str) -> Value {
    map([("Fn::Sub", s(text))])
}

/// `Fn::GetAtt: [resource, attribute]`.
pub fn get_att(resource: &str, attribute: &str) -> Value {
    map([("Fn::GetAtt", list(vec![s(resource), s(attribute)]))])
}

/// `Fn::Select: [index, list]`.
pub fn select(index: usize, of: Value) -> Value {
    map([("Fn::Select", list(vec![n(index as i64), of]))])
}

/// `Fn::Join: [separator, items]`.
pub fn join(separator: &str, items: Vec<Value>) -> Value {
    map([("Fn::Join", list(vec![s(separator), list(items)]))])
}

/// `Fn::Base64: value`.
pub fn base64(v: Value) -> Value {
    map([("Fn::Base64", v)])
}

/// A tag `{Key, Value}` (either may be an intrinsic function).
pub fn tag(key: Value, value: Value) -> Value {
    map([("Key", key), ("Value", value)])
}

/// A parameter of type `ty` with a description and optional extras.
pub fn param(ty: &str, description: &str, extra: Vec<(&str, Value)>) -> Value {
    let mut m = Mapping::new();
    m.insert(s("Type"), s(ty));
    m.insert(s("Description"), s(description));
    for (k, v) in extra {
        m.insert(s(k), v);
    }
    Value::Mapping(m)
}

/// A resource of type `ty` with `properties` (and `DependsOn` when given).
pub fn resource(ty: &str, properties: Value, depends_on: &[&str]) -> Value {
    let mut m = Mapping::new();
    m.insert(s("Type"), s(ty));
    if !depends_on.is_empty() {
        m.insert(
            s("DependsOn"),
            list(depends_on.iter().map(|d| s(*d)).collect()),
        );
    }
    m.insert(s("Properties"), properties);
    Value::Mapping(m)
}

/// An output with a description and a value.
pub fn output(description: &str, value: Value) -> Value {
    map([("Description", s(description)), ("Value", value)])
}

/// A whole template: version, description, parameter groups (the
/// console's `AWS::CloudFormation::Interface`), parameters, resources and
/// outputs.
pub struct Template {
    /// `Description`.
    pub description: String,
    /// `Parameters`, in order.
    pub parameters: Vec<(String, Value)>,
    /// `Resources`, in order.
    pub resources: Vec<(String, Value)>,
    /// `Outputs`, in order.
    pub outputs: Vec<(String, Value)>,
}

impl Template {
    /// An empty template with `description`.
    pub fn new(description: impl Into<String>) -> Template {
        Template {
            description: description.into(),
            parameters: Vec::new(),
            resources: Vec::new(),
            outputs: Vec::new(),
        }
    }

    /// Adds a parameter.
    pub fn param(&mut self, name: &str, v: Value) {
        self.parameters.push((name.to_string(), v));
    }

    /// Adds a resource.
    pub fn res(&mut self, name: impl Into<String>, v: Value) {
        self.resources.push((name.into(), v));
    }

    /// Adds an output.
    pub fn out(&mut self, name: &str, v: Value) {
        self.outputs.push((name.to_string(), v));
    }

    /// The names of the parameters, in order.
    pub fn parameter_names(&self) -> Vec<String> {
        self.parameters.iter().map(|(k, _)| k.clone()).collect()
    }

    /// The template as YAML text, with a header comment naming `header`.
    pub fn to_yaml(&self, header: &str) -> String {
        let mut top = Mapping::new();
        top.insert(s("AWSTemplateFormatVersion"), s("2010-09-09"));
        top.insert(s("Description"), s(self.description.clone()));
        if !self.parameters.is_empty() {
            top.insert(s("Parameters"), map_of(self.parameters.clone()));
        }
        top.insert(s("Resources"), map_of(self.resources.clone()));
        if !self.outputs.is_empty() {
            top.insert(s("Outputs"), map_of(self.outputs.clone()));
        }
        let body = serde_yaml_ng::to_string(&Value::Mapping(top))
            .expect("a YAML value of strings, numbers, lists and mappings serializes");
        let body = quote_dates(&body);
        let mut text = String::new();
        for line in header.lines() {
            text.push_str("# ");
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(&body);
        text
    }
}

/// Quotes plain scalars shaped `YYYY-MM-DD` (`2010-09-09`, a policy's
/// `Version: 2012-10-17`): YAML 1.1 readers (PyYAML, used by moto and
/// cfn-lint) take them for dates, where CloudFormation means strings.
fn quote_dates(text: &str) -> String {
    let is_date = |v: &str| {
        let b = v.as_bytes();
        b.len() == 10
            && b.iter().enumerate().all(|(i, c)| {
                if i == 4 || i == 7 {
                    *c == b'-'
                } else {
                    c.is_ascii_digit()
                }
            })
    };
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.lines() {
        let split = line.rfind(": ").map(|i| i + 2).or_else(|| {
            line.trim_start()
                .starts_with("- ")
                .then(|| line.find("- ").unwrap() + 2)
        });
        match split {
            Some(i) if is_date(&line[i..]) => {
                out.push_str(&line[..i]);
                out.push('\'');
                out.push_str(&line[i..]);
                out.push('\'');
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_intrinsics_are_long_form() {
        let mut t = Template::new("d");
        t.param("B", param("String", "b", vec![]));
        t.param("A", param("String", "a", vec![("Default", s("x"))]));
        t.res(
            "Vpc",
            resource("AWS::EC2::VPC", map([("CidrBlock", r("B"))]), &[]),
        );
        t.out("Id", output("the id", sub("${Vpc}")));
        let y = t.to_yaml("header line");
        assert!(
            y.starts_with("# header line\nAWSTemplateFormatVersion: '2010-09-09'\n"),
            "{y}"
        );
        let b = y.find("  B:").unwrap();
        let a = y.find("  A:").unwrap();
        assert!(b < a, "{y}");
        assert!(y.contains("CidrBlock:\n        Ref: B"), "{y}");
        assert!(y.contains("Fn::Sub: ${Vpc}"), "{y}");
        assert_eq!(
            quote_dates("  Version: 2012-10-17\n  - 2012-10-17\n  Name: 2012-10-1x\n"),
            "  Version: '2012-10-17'\n  - '2012-10-17'\n  Name: 2012-10-1x\n"
        );
    }
}
