//! The lines that carry metrics: one per request and one per witness refusal, each a JSON
//! object and, when `HEARTH_METRICS` asks for metrics, a CloudWatch Embedded Metric Format
//! record too (its `_aws` member). CloudWatch Logs turns the record into metrics as it ingests
//! the line: no API call, and nothing on the request path beyond formatting the line.
//!
//! CloudWatch bills each metric (a namespace, name and dimension set) for every hour it
//! receives a value, so what a line embeds is chosen by [`MetricDetail`]:
//! - `function`: the two counts alarms read that AWS's own metrics cannot give (`Throttled`,
//!   Hearth's 429s; `WitnessRefusals`), over the whole deployment (by `Deployment` alone: the
//!   stack, so that two stacks in one account and region count apart), and only on a line
//!   where the count is 1. A failed tool call's line carries `ToolErrors: 1` as a plain
//!   member, not a metric: no alarm reads it, and the dashboard counts it from the log lines
//!   (a Logs Insights widget, paid only by the bytes it scans when looked at) where a metric
//!   would cost $0.30 a month. Calls, 5xx and durations come from `AWS/ApiGateway` and
//!   `AWS/Lambda`, which cost nothing;
//! - `tool`: those, `ToolErrors` as a metric over the deployment, and the five request
//!   metrics on every request line by `Function` and, for a tool call, by `Function` and
//!   `Tool`;
//! - `off`: no `_aws` member at all.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::{FieldValue, Fields, METRIC_NAMESPACE, REQUEST_TARGET, WITNESS_TARGET};
use crate::config::MetricDetail;

/// The EMF directive's metric definitions (`Name`, `Unit`).
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct MetricDefinition {
    name: &'static str,
    unit: &'static str,
}

const REQUESTS: MetricDefinition = count("Requests");
const ERRORS: MetricDefinition = count("Errors");
const THROTTLED: MetricDefinition = count("Throttled");
const TOOL_ERRORS: MetricDefinition = count("ToolErrors");
const WITNESS_REFUSALS: MetricDefinition = count("WitnessRefusals");
const LATENCY: MetricDefinition = MetricDefinition {
    name: "Latency",
    unit: "Milliseconds",
};

const fn count(name: &'static str) -> MetricDefinition {
    MetricDefinition {
        name,
        unit: "Count",
    }
}

/// A metric over the whole deployment: by its name alone.
const DEPLOYMENT_WIDE: &[&[&str]] = &[&["Deployment"]];
const BY_FUNCTION: &[&[&str]] = &[&["Function"]];
const BY_FUNCTION_AND_TOOL: &[&[&str]] = &[&["Function"], &["Function", "Tool"]];

/// The `_aws` object of an EMF record. Every set of directives a line can carry is a constant
/// below, so a line allocates nothing for its record (the request line is on the hot path).
#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Emf {
    timestamp: i64,
    cloud_watch_metrics: &'static [Directive],
}

impl Emf {
    fn at(now: time::OffsetDateTime, directives: &'static [Directive]) -> Self {
        Self {
            timestamp: (now.unix_timestamp_nanos() / 1_000_000) as i64,
            cloud_watch_metrics: directives,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Directive {
    namespace: &'static str,
    dimensions: &'static [&'static [&'static str]],
    metrics: &'static [&'static MetricDefinition],
}

const fn directive(
    dimensions: &'static [&'static [&'static str]],
    metrics: &'static [&'static MetricDefinition],
) -> Directive {
    Directive {
        namespace: METRIC_NAMESPACE,
        dimensions,
        metrics,
    }
}

const REQUEST_METRICS: &[&MetricDefinition] =
    &[&REQUESTS, &ERRORS, &THROTTLED, &TOOL_ERRORS, &LATENCY];
/// The alarms' counts over the deployment, on every request line at `tool`.
const DEPLOYMENT_COUNTS: Directive = directive(DEPLOYMENT_WIDE, &[&THROTTLED, &TOOL_ERRORS]);

/// At `function`, a line names only the count it carries.
const THROTTLED_ONLY: &[Directive] = &[directive(DEPLOYMENT_WIDE, &[&THROTTLED])];
/// At `tool`, by function, and by function and tool for a tool call.
const EVERY_REQUEST_METRIC: &[Directive] =
    &[DEPLOYMENT_COUNTS, directive(BY_FUNCTION, REQUEST_METRICS)];
const EVERY_TOOL_CALL_METRIC: &[Directive] = &[
    DEPLOYMENT_COUNTS,
    directive(BY_FUNCTION_AND_TOOL, REQUEST_METRICS),
];
const REFUSAL_OVER_THE_DEPLOYMENT: &[Directive] =
    &[directive(DEPLOYMENT_WIDE, &[&WITNESS_REFUSALS])];
const REFUSAL_BY_FUNCTION_TOO: &[Directive] = &[
    directive(DEPLOYMENT_WIDE, &[&WITNESS_REFUSALS]),
    directive(BY_FUNCTION, &[&WITNESS_REFUSALS]),
];

/// What the metrics are counted by: the function (Lambda's name, or `local`) and the
/// deployment (`HEARTH_DEPLOYMENT`, the stack's name, or `local`).
pub(super) struct Names {
    pub(super) function: String,
    pub(super) deployment: String,
}

/// A metric line: the time, level and target as tracing writes them, the logged fields, the
/// names the metrics are counted by, then the metrics' own members and `_aws`.
struct Line<'a> {
    now: time::OffsetDateTime,
    level: &'static str,
    target: &'static str,
    fields: &'a Fields,
    names: &'a Names,
    /// Members after the fields and the names: the dimension values and metric values.
    metrics: Vec<(&'static str, Metric<'a>)>,
    emf: Option<Emf>,
}

enum Metric<'a> {
    Text(&'a str),
    Count(u8),
    Milliseconds(f64),
}

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let timestamp = self
            .now
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("timestamp", &timestamp)?;
        map.serialize_entry("level", self.level)?;
        map.serialize_entry("target", self.target)?;
        for (name, value) in &self.fields.0 {
            // The line's own members (capitalised, or tracing's three, or `_aws`) are never
            // taken from a field: a duplicate key would make the record invalid EMF.
            if name.starts_with(|c: char| c.is_ascii_uppercase())
                || matches!(*name, "timestamp" | "level" | "target" | "_aws")
            {
                continue;
            }
            map.serialize_entry(name, value)?;
        }
        map.serialize_entry("Function", &self.names.function)?;
        map.serialize_entry("Deployment", &self.names.deployment)?;
        for (name, metric) in &self.metrics {
            match metric {
                Metric::Text(text) => map.serialize_entry(name, text)?,
                Metric::Count(count) => map.serialize_entry(name, count)?,
                Metric::Milliseconds(ms) => map.serialize_entry(name, ms)?,
            }
        }
        if let Some(emf) = &self.emf {
            map.serialize_entry("_aws", emf)?;
        }
        map.end()
    }
}

impl Line<'_> {
    fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One request line: the logged fields, the time and level as tracing writes them, and the
/// metrics `detail` asks for.
pub(super) fn request_line(
    mut fields: Fields,
    now: time::OffsetDateTime,
    names: &Names,
    detail: MetricDetail,
) -> String {
    let status = fields.unsigned("status");
    // Off, the flag stays a logged field; else it becomes the `ToolErrors` member.
    let tool_failed = detail != MetricDetail::Off && fields.take_flag("tool_failed");
    let throttled = status == 429;
    let (metrics, directives) = match detail {
        MetricDetail::Off => (Vec::new(), None),
        MetricDetail::Function => {
            let mut metrics = Vec::new();
            if throttled {
                metrics.push(("Throttled", Metric::Count(1)));
            }
            // On the line for the dashboard's log query, but named by no directive: not a
            // metric at `function` (see the module's doc).
            if tool_failed {
                metrics.push(("ToolErrors", Metric::Count(1)));
            }
            (metrics, throttled.then_some(THROTTLED_ONLY))
        }
        MetricDetail::Tool => {
            let tool = fields.text("tool").filter(|tool| *tool != "-");
            let latency_ms = fields.unsigned("latency_us") as f64 / 1000.0;
            let mut metrics = Vec::with_capacity(6);
            if let Some(tool) = tool {
                metrics.push(("Tool", Metric::Text(tool)));
            }
            metrics.extend([
                ("Requests", Metric::Count(1)),
                ("Errors", Metric::Count(u8::from(status >= 500))),
                ("Throttled", Metric::Count(u8::from(throttled))),
                ("ToolErrors", Metric::Count(u8::from(tool_failed))),
                ("Latency", Metric::Milliseconds(latency_ms)),
            ]);
            let directives = match tool {
                Some(_) => EVERY_TOOL_CALL_METRIC,
                None => EVERY_REQUEST_METRIC,
            };
            (metrics, Some(directives))
        }
    };
    Line {
        now,
        level: "INFO",
        target: REQUEST_TARGET,
        fields: &fields,
        names,
        metrics,
        emf: directives.map(|directives| Emf::at(now, directives)),
    }
    .to_json()
}

/// A witness's refusal: its fields and, unless metrics are off, `WitnessRefusals` = 1 by
/// deployment (and by function at `tool`).
pub(super) fn refusal_line(
    fields: &Fields,
    now: time::OffsetDateTime,
    names: &Names,
    detail: MetricDetail,
) -> String {
    let directives = match detail {
        MetricDetail::Off => None,
        MetricDetail::Function => Some(REFUSAL_OVER_THE_DEPLOYMENT),
        MetricDetail::Tool => Some(REFUSAL_BY_FUNCTION_TOO),
    };
    let metrics = match directives {
        Some(_) => vec![("WitnessRefusals", Metric::Count(1))],
        None => Vec::new(),
    };
    Line {
        now,
        level: "ERROR",
        target: WITNESS_TARGET,
        fields,
        names,
        metrics,
        emf: directives.map(|directives| Emf::at(now, directives)),
    }
    .to_json()
}

impl Serialize for FieldValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            FieldValue::Unsigned(value) => serializer.serialize_u64(*value),
            FieldValue::Signed(value) => serializer.serialize_i64(*value),
            FieldValue::Bool(value) => serializer.serialize_bool(*value),
            FieldValue::Text(text) => serializer.serialize_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The fields as tracing would record them, in order, from a JSON object of them.
    fn fields(object: Value) -> Fields {
        let Value::Object(object) = object else {
            unreachable!()
        };
        let mut fields = Fields::default();
        for (name, value) in object {
            let name: &'static str = Box::leak(name.into_boxed_str());
            let value = match value {
                Value::Bool(flag) => FieldValue::Bool(flag),
                Value::Number(n) if n.is_u64() => FieldValue::Unsigned(n.as_u64().unwrap()),
                Value::Number(n) => FieldValue::Signed(n.as_i64().unwrap()),
                Value::String(text) => FieldValue::Text(text),
                other => FieldValue::Text(other.to_string()),
            };
            fields.0.push((name, value));
        }
        fields
    }

    /// What a line carries only when it counts a call (at `tool`).
    const PER_CALL_MEMBERS: [&str; 6] = [
        "Requests",
        "Errors",
        "Throttled",
        "ToolErrors",
        "Latency",
        "Tool",
    ];

    fn parsed(line: &str) -> Value {
        assert!(!line.contains('\n'), "one line: {line}");
        serde_json::from_str(line).expect("a line is one JSON object")
    }

    fn tool_call(status: u64, tool_failed: bool) -> Fields {
        fields(json!({"request_id": "r1", "method": "tools/call",
            "tool": "explain_why", "status": status, "latency_us": 1500, "subject": "abcd",
            "tool_failed": tool_failed}))
    }

    fn names(function: &str) -> Names {
        Names {
            function: function.to_owned(),
            deployment: "hearth-home".to_owned(),
        }
    }

    fn request(detail: MetricDetail, fields: Fields) -> Value {
        let now = time::macros::datetime!(2026-12-01 12:00:00 UTC);
        parsed(&request_line(
            fields,
            now,
            &names("hearth-McpFunction-1"),
            detail,
        ))
    }

    /// Every directive's metrics, as (dimension sets, metric names), and a check that each
    /// metric a directive names is a number on the line (else CloudWatch drops the record).
    fn directives(line: &Value) -> Vec<(Value, Vec<String>)> {
        let emf = &line["_aws"];
        assert_eq!(emf["Timestamp"], 1_796_126_400_000_i64);
        emf["CloudWatchMetrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|directive| {
                assert_eq!(directive["Namespace"], "Hearth");
                let names = directive["Metrics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|metric| metric["Name"].as_str().unwrap().to_owned())
                    .collect::<Vec<_>>();
                for name in &names {
                    assert!(line[name].is_number(), "{name} on {line}");
                }
                for set in directive["Dimensions"].as_array().unwrap() {
                    for dimension in set.as_array().unwrap() {
                        assert!(line[dimension.as_str().unwrap()].is_string(), "{dimension}");
                    }
                }
                (directive["Dimensions"].clone(), names)
            })
            .collect()
    }

    #[test]
    fn the_logged_fields_are_on_every_line_at_every_detail() {
        for detail in [
            MetricDetail::Function,
            MetricDetail::Tool,
            MetricDetail::Off,
        ] {
            let line = request(detail, tool_call(200, false));
            assert_eq!(
                (&line["timestamp"], &line["level"], &line["target"]),
                (
                    &json!("2026-12-01T12:00:00Z"),
                    &json!("INFO"),
                    &json!("hearth::request")
                )
            );
            assert_eq!(
                (&line["request_id"], &line["status"], &line["subject"]),
                (&json!("r1"), &json!(200), &json!("abcd")),
                "the logged fields as they were"
            );
            assert_eq!(line["tool"], "explain_why");
            assert_eq!(line["Function"], "hearth-McpFunction-1");
            assert_eq!(line["Deployment"], "hearth-home");
        }
    }

    #[test]
    fn at_tool_a_tool_call_is_counted_by_function_and_tool_and_over_the_deployment() {
        let line = request(MetricDetail::Tool, tool_call(200, true));
        assert_eq!(line["Tool"], "explain_why");
        assert_eq!(
            (&line["Requests"], &line["Errors"], &line["Throttled"]),
            (&json!(1), &json!(0), &json!(0))
        );
        assert_eq!(
            (&line["ToolErrors"], &line["Latency"]),
            (&json!(1), &json!(1.5))
        );
        assert!(
            line.get("tool_failed").is_none(),
            "the flag becomes the metric"
        );
        assert_eq!(
            directives(&line),
            vec![
                (
                    json!([["Deployment"]]),
                    vec!["Throttled".into(), "ToolErrors".into()]
                ),
                (
                    json!([["Function"], ["Function", "Tool"]]),
                    ["Requests", "Errors", "Throttled", "ToolErrors", "Latency"]
                        .map(String::from)
                        .to_vec()
                ),
            ]
        );
    }

    #[test]
    fn at_tool_other_lines_are_by_function_only_and_count_5xx_and_429() {
        for (status, errors, throttled) in [(503, 1, 0), (429, 0, 1), (401, 0, 0)] {
            let fields = fields(
                json!({"method": "initialize", "tool": "-", "status": status, "latency_us": 10}),
            );
            let line = request(MetricDetail::Tool, fields);
            assert!(line.get("Tool").is_none());
            assert_eq!(directives(&line)[1].0, json!([["Function"]]));
            assert_eq!(
                (line["Errors"].as_u64(), line["Throttled"].as_u64()),
                (Some(errors), Some(throttled))
            );
        }
    }

    #[test]
    fn at_function_a_line_counts_only_what_happened_over_the_deployment() {
        let quiet = request(MetricDetail::Function, tool_call(200, false));
        assert!(quiet.get("_aws").is_none(), "nothing to count: {quiet}");
        for name in PER_CALL_MEMBERS {
            assert!(quiet.get(name).is_none(), "{name} on {quiet}");
        }
        assert!(
            quiet.get("tool_failed").is_none(),
            "the flag is never logged"
        );

        let failed = request(MetricDetail::Function, tool_call(200, true));
        assert_eq!(failed["ToolErrors"], 1, "for the dashboard's log query");
        assert!(
            failed.get("_aws").is_none(),
            "a tool error is no metric at `function`: {failed}"
        );

        let throttled = request(MetricDetail::Function, tool_call(429, false));
        assert_eq!(throttled["Throttled"], 1);
        assert_eq!(
            directives(&throttled),
            vec![(json!([["Deployment"]]), vec!["Throttled".into()])]
        );
        assert!(
            throttled.get("Tool").is_none(),
            "no dimension, no dimension value"
        );

        let both = request(MetricDetail::Function, tool_call(429, true));
        assert_eq!(
            (&both["Throttled"], &both["ToolErrors"]),
            (&json!(1), &json!(1))
        );
        assert_eq!(
            directives(&both),
            vec![(json!([["Deployment"]]), vec!["Throttled".into()])]
        );
    }

    #[test]
    fn off_a_line_is_plain_json_that_keeps_the_flag() {
        for status in [200, 429, 503] {
            let line = request(MetricDetail::Off, tool_call(status, true));
            assert!(line.get("_aws").is_none(), "{line}");
            assert_eq!(line["tool_failed"], true);
            for name in PER_CALL_MEMBERS {
                assert!(line.get(name).is_none(), "{name} on {line}");
            }
        }
    }

    #[test]
    fn a_field_never_doubles_a_member_of_the_line() {
        for detail in [
            MetricDetail::Function,
            MetricDetail::Tool,
            MetricDetail::Off,
        ] {
            let fields = fields(
                json!({"status": 429, "latency_us": 10, "Tool": "x", "level": "x",
                "timestamp": "x", "Requests": 9, "Throttled": 7, "Function": "y", "Deployment": "z",
                "_aws": "x"}),
            );
            let line = request_line(
                fields,
                time::OffsetDateTime::UNIX_EPOCH,
                &names("local"),
                detail,
            );
            for member in [
                "Tool",
                "level",
                "timestamp",
                "Requests",
                "Throttled",
                "Function",
                "Deployment",
                "_aws",
            ] {
                let key = format!("\"{member}\":");
                assert!(line.matches(&key).count() <= 1, "{member} twice: {line}");
            }
            let line = parsed(&line);
            assert_eq!(
                (&line["level"], &line["Function"]),
                (&json!("INFO"), &json!("local"))
            );
            assert!(line.get("Tool").is_none(), "no tool was logged: {line}");
        }
    }

    #[test]
    fn a_witness_refusal_is_an_error_line_counted_over_the_deployment() {
        let refusal = || {
            fields(
                json!({"witness": "home", "status": 422, "message": "a witness refused a checkpoint"}),
            )
        };
        let now = time::macros::datetime!(2026-12-01 12:00:00 UTC);
        for (detail, sets) in [
            (MetricDetail::Function, vec![json!([["Deployment"]])]),
            (
                MetricDetail::Tool,
                vec![json!([["Deployment"]]), json!([["Function"]])],
            ),
        ] {
            let line = parsed(&refusal_line(&refusal(), now, &names("local"), detail));
            assert_eq!(
                (line["level"].as_str(), line["witness"].as_str()),
                (Some("ERROR"), Some("home"))
            );
            assert_eq!(line["WitnessRefusals"], 1);
            let found = directives(&line);
            assert_eq!(
                found.iter().map(|(set, _)| set.clone()).collect::<Vec<_>>(),
                sets
            );
            assert!(found.iter().all(|(_, names)| names == &["WitnessRefusals"]));
        }
        let off = parsed(&refusal_line(
            &refusal(),
            now,
            &names("local"),
            MetricDetail::Off,
        ));
        assert_eq!(off["level"], "ERROR");
        assert!(off.get("_aws").is_none() && off.get("WitnessRefusals").is_none());
    }
}
