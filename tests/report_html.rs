//! `Schema::report_html` (`report --format html`): one self-contained page that parses as HTML
//! with no error, holds every collection and relationship of the help desk (boxes and arrows
//! in the SVG, rows of seed 003's checklist, index tables), and loads nothing from anywhere.
//! That it renders in a browser without console errors is checked by `.ci/render-report`
//! (headless Chromium), which also makes the README's screenshot.

#[path = "../examples/helpdesk/model.rs"]
mod helpdesk;

use html5ever::tendril::TendrilSink;
use html5ever::tree_builder::TreeBuilderOpts;
use html5ever::ParseOpts;
use markup5ever_rcdom::{Handle, NodeData, RcDom};

/// The HTML5 parse errors of `page` (the WHATWG algorithm, every error reported).
fn parse_errors(page: &str) -> (RcDom, Vec<String>) {
    let options = ParseOpts {
        tree_builder: TreeBuilderOpts {
            exact_errors: true,
            scripting_enabled: false,
            ..TreeBuilderOpts::default()
        },
        ..ParseOpts::default()
    };
    let dom = html5ever::parse_document(RcDom::default(), options)
        .from_utf8()
        .read_from(&mut page.as_bytes())
        .unwrap();
    let errors = dom.errors.iter().map(ToString::to_string).collect();
    (dom, errors)
}

/// Every element of the tree, depth first, with its tag name and attributes.
fn elements(node: &Handle, out: &mut Vec<(String, Vec<(String, String)>)>) {
    if let NodeData::Element { name, attrs, .. } = &node.data {
        out.push((
            name.local.to_string(),
            attrs
                .borrow()
                .iter()
                .map(|a| (a.name.local.to_string(), a.value.to_string()))
                .collect(),
        ));
    }
    for child in node.children.borrow().iter() {
        elements(child, out);
    }
}

/// The text of a node, its text nodes joined with spaces.
fn text_of(node: &Handle, out: &mut Vec<String>) {
    if let NodeData::Text { contents } = &node.data {
        out.push(contents.borrow().to_string());
    }
    for child in node.children.borrow().iter() {
        text_of(child, out);
    }
}

/// The arrows' labels: each `<text class="label ...">` of the diagram, its lines joined.
fn label_texts(node: &Handle, out: &mut Vec<String>) {
    if let NodeData::Element { name, attrs, .. } = &node.data {
        let class = attrs
            .borrow()
            .iter()
            .find(|a| &*a.name.local == "class")
            .map(|a| a.value.to_string())
            .unwrap_or_default();
        if &*name.local == "text" && class.split(' ').next() == Some("label") {
            let mut parts = Vec::new();
            text_of(node, &mut parts);
            out.push(parts.join(" "));
            return;
        }
    }
    for child in node.children.borrow().iter() {
        label_texts(child, out);
    }
}

fn attribute<'a>(attrs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn the_page_is_valid_html_and_the_check_catches_invalid_pages() {
    let page = helpdesk::schema().report_html();
    let (_, errors) = parse_errors(&page);
    assert!(errors.is_empty(), "parse errors: {errors:#?}");
    // positive controls: the same parser reports what is wrong with broken pages
    let (_, errors) = parse_errors("<!DOCTYPE html><html><head><title>x</title></head><body><table><tr><td>a</b></td></tr></table></body></html>");
    assert!(!errors.is_empty(), "a stray end tag is an error");
    let (_, errors) = parse_errors(&page.replacen("<!DOCTYPE html>", "", 1));
    assert!(!errors.is_empty(), "a page without a doctype is an error");
}

#[test]
fn the_page_holds_every_collection_and_relationship_of_the_help_desk() {
    let schema = helpdesk::schema();
    let page = schema.report_html();
    let (dom, _) = parse_errors(&page);
    let mut all = Vec::new();
    elements(&dom.document, &mut all);

    let boxes: Vec<&str> = all
        .iter()
        .filter(|(tag, attrs)| tag == "g" && attribute(attrs, "class") == Some("collection"))
        .filter_map(|(_, attrs)| attribute(attrs, "data-collection"))
        .collect();
    let names: Vec<&str> = schema
        .collections()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let mut sorted = (boxes.clone(), names.clone());
    sorted.0.sort();
    sorted.1.sort();
    assert_eq!(sorted.0, sorted.1, "one box per collection");
    // the most connected collection is drawn in the middle of the first row
    let corner = |name: &str| -> (i64, i64) {
        let at = all
            .iter()
            .position(|(tag, attrs)| {
                tag == "g" && attribute(attrs, "data-collection") == Some(name)
            })
            .unwrap();
        let (tag, rect) = &all[at + 1];
        assert_eq!(tag, "rect", "a box is a rect");
        let number = |a: &str| attribute(rect, a).unwrap().parse::<i64>().unwrap();
        (number("x"), number("y"))
    };
    let mut columns: Vec<i64> = names.iter().map(|n| corner(n).0).collect();
    columns.sort();
    columns.dedup();
    assert_eq!(columns.len(), 3, "three columns: {columns:?}");
    let tickets = corner("tickets");
    assert_eq!(tickets.0, columns[1], "tickets in the middle column");
    assert!(
        names.iter().all(|n| corner(n).1 >= tickets.1),
        "tickets in the first row"
    );
    assert_eq!(
        names,
        ["customers", "agents", "tags", "tickets", "messages"]
    );
    for name in &names {
        assert!(
            all.iter().any(|(tag, attrs)| tag == "h3"
                && attribute(attrs, "id") == Some(&format!("collection-{name}"))),
            "an index table for {name}"
        );
    }

    // arrows by kind: one per reference, extended reference and subset
    let arrows = |kind: &str| {
        all.iter()
            .filter(|(tag, attrs)| {
                tag == "g" && attribute(attrs, "class") == Some(&format!("relationship {kind}"))
            })
            .count()
    };
    let specs = schema.collections();
    let references: usize = specs.iter().map(|c| c.references.len()).sum();
    let copies: usize = specs.iter().map(|c| c.copies.len()).sum();
    let subsets: usize = specs.iter().map(|c| c.subsets.len()).sum();
    assert_eq!(arrows("reference"), references);
    assert_eq!(arrows("extended-reference"), copies);
    assert_eq!(arrows("subset"), subsets);
    assert_eq!((references, copies, subsets), (2, 2, 1), "the help desk's");
    // labelled with the bound and the sync strategy (the lines of a label joined)
    let mut labels = Vec::new();
    label_texts(&dom.document, &mut labels);
    assert_eq!(labels.len(), references + copies + subsets, "{labels:?}");
    for label in [
        "assignee {name}, async",
        "customer {name}, transactional",
        "lastMessage: newest 1 by at, transactional",
        "tags (≤ 10 ids)",
        "ticketId (one id)",
    ] {
        assert!(labels.iter().any(|l| l == label), "{label} in {labels:?}");
    }

    // seed 003's checklist: one row per relationship, embeds included
    let rows: Vec<&str> = all
        .iter()
        .filter(|(tag, _)| tag == "tr")
        .filter_map(|(_, attrs)| attribute(attrs, "data-relationship"))
        .collect();
    for relationship in [
        "tickets.history",
        "tickets.tags",
        "tickets.customer",
        "tickets.assignee",
        "tickets.lastMessage",
        "messages.attachments",
        "messages.ticketId",
    ] {
        assert!(rows.contains(&relationship), "{relationship} in {rows:?}");
    }
    assert_eq!(rows.len(), 7);

    // a size bar against 16 MiB per collection, the indexes with their reasons, the warnings
    assert_eq!(page.matches("of 16 MiB</text>").count(), names.len());
    assert!(page.contains("fan-out of <code>agents</code> copies at <code>assignee</code>"));
    assert!(page.contains("<h2>Warnings</h2>"));
}

#[test]
fn the_page_loads_nothing_from_anywhere() {
    let page = helpdesk::schema().report_html();
    let (dom, _) = parse_errors(&page);
    let mut all = Vec::new();
    elements(&dom.document, &mut all);
    for (tag, attrs) in &all {
        assert_ne!(tag, "script", "no script");
        assert_ne!(tag, "link", "no stylesheet or font link");
        assert_ne!(tag, "img", "images are inline SVG");
        for (name, value) in attrs {
            if name == "src" || name == "href" {
                panic!("<{tag} {name}={value:?}> loads something");
            }
            if name == "xmlns" {
                continue;
            }
            assert!(
                !value.contains("http://") && !value.contains("https://"),
                "<{tag} {name}={value:?}>"
            );
        }
    }
    assert!(!page.contains("@import") && !page.contains("url(http"));
}

mod buckets {
    use mongo_schema::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "sensors")]
    pub struct Sensor {
        #[serde(rename = "_id")]
        pub id: String,
    }

    #[derive(BsonSchema, Serialize, Deserialize, Debug, Clone)]
    pub struct Reading {
        pub at: i64,
        pub value: f64,
    }

    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "readings")]
    #[bucket(parent = sensor_id, entries = readings, count = count, key = "at", first = first_at, last = last_at)]
    pub struct ReadingBucket {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[reference]
        pub sensor_id: Ref<Sensor>,
        #[embed(max = 25)]
        pub readings: Vec<Reading>,
        pub count: i64,
        pub first_at: i64,
        pub last_at: i64,
    }

    /// A plain reference beside the bucket, the control: it stays a reference arrow.
    #[derive(Document, Serialize, Deserialize, Debug, Clone)]
    #[collection(name = "alarms")]
    pub struct Alarm {
        #[serde(rename = "_id")]
        pub id: ObjectId,
        #[reference]
        pub sensor_id: Ref<Sensor>,
    }
}

#[test]
fn a_bucket_is_drawn_as_a_bucket_with_its_bound_and_order() {
    use mongo_schema::Schema;
    let schema = Schema::new()
        .model::<buckets::Sensor>()
        .model::<buckets::ReadingBucket>()
        .model::<buckets::Alarm>()
        .build()
        .unwrap();
    let page = schema.report_html();
    let (dom, errors) = parse_errors(&page);
    assert!(errors.is_empty(), "{errors:?}");
    let mut all = Vec::new();
    elements(&dom.document, &mut all);
    let arrows = |kind: &str| {
        all.iter()
            .filter(|(tag, attrs)| {
                tag == "g" && attribute(attrs, "class") == Some(&format!("relationship {kind}"))
            })
            .count()
    };
    assert_eq!(arrows("bucket"), 1, "the readings' parent reference");
    assert_eq!(arrows("reference"), 1, "the alarm's reference stays one");
    let mut labels = Vec::new();
    label_texts(&dom.document, &mut labels);
    assert!(
        labels
            .iter()
            .any(|l| l == "sensor_id: buckets of ≤ 25 readings, by last_at"),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l == "sensor_id (one id)"),
        "{labels:?}"
    );
    assert!(page.contains(r#"marker-end="url(#head-bucket)""#));
}
