//! The schema report as one self-contained HTML page: an inline SVG diagram (collections as
//! boxes with their fields and worst-case size against 16 MiB, relationships as arrows drawn by
//! kind and labelled with their bound and sync strategy), seed 003's checklist per
//! relationship, the indexes with their reasons, and the warnings. No script, no stylesheet or
//! font from the network.

use std::fmt::Write as _;

use super::report::{index_options, relationships, type_summary, warnings};
use crate::{CollectionSpec, Schema, SizeBound, MAX_DOCUMENT_BYTES};

const BOX_WIDTH: i64 = 300;
const LINE: i64 = 16;
const HEADER: i64 = 30;
const BAR: i64 = 34;
const GAP_X: i64 = 220;
const GAP_Y: i64 = 90;
const MARGIN: i64 = 40;
/// Fields listed in a box; the rest are counted.
const MAX_FIELDS: usize = 12;

/// Escapes text for HTML content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Markdown's inline code (`x`) as `<code>`, the rest escaped.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

/// The top-level fields of a collection: stored name and type.
fn fields(spec: &CollectionSpec) -> Vec<(String, String)> {
    let Ok(json) = spec.validator.get_document("$jsonSchema") else {
        return Vec::new();
    };
    let Ok(properties) = json.get_document("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let summary = property
                .as_document()
                .map_or_else(String::new, type_summary);
            (name.clone(), summary.replace('`', ""))
        })
        .collect()
}

/// Where a collection's box is drawn.
#[derive(Clone, Copy)]
struct Placed {
    x: i64,
    y: i64,
    height: i64,
}

impl Placed {
    fn centre(self) -> (f64, f64) {
        (
            (self.x + BOX_WIDTH / 2) as f64,
            (self.y + self.height / 2) as f64,
        )
    }

    /// The point where the segment from the centre towards `(tx, ty)` leaves the box.
    fn edge_towards(self, tx: f64, ty: f64) -> (f64, f64) {
        let (cx, cy) = self.centre();
        let (dx, dy) = (tx - cx, ty - cy);
        if dx == 0.0 && dy == 0.0 {
            return (cx, cy);
        }
        let half_w = BOX_WIDTH as f64 / 2.0;
        let half_h = self.height as f64 / 2.0;
        let scale = (half_w / dx.abs()).min(half_h / dy.abs());
        (cx + dx * scale, cy + dy * scale)
    }
}

fn box_height(spec: &CollectionSpec) -> i64 {
    let listed = fields(spec).len().min(MAX_FIELDS + 1) as i64;
    HEADER + listed * LINE + BAR + 10
}

/// One arrow of the diagram.
struct Arrow {
    from: usize,
    to: usize,
    kind: &'static str,
    label: String,
}

fn arrows(schema: &Schema) -> Vec<Arrow> {
    let index = |name: &str| schema.collections().iter().position(|c| c.name == name);
    let mut out = Vec::new();
    for (from, spec) in schema.collections().iter().enumerate() {
        for reference in &spec.references {
            if let Some(to) = index(&reference.target) {
                if let Some(label) = bucket_label(spec, &reference.field) {
                    out.push(Arrow {
                        from,
                        to,
                        kind: "bucket",
                        label,
                    });
                    continue;
                }
                let bound = reference
                    .max
                    .map_or("one id".to_owned(), |m| format!("≤ {m} ids"));
                out.push(Arrow {
                    from,
                    to,
                    kind: "reference",
                    label: format!("{} ({bound})", reference.field),
                });
            }
        }
        for copy in &spec.copies {
            if let Some(to) = index(&copy.source) {
                out.push(Arrow {
                    from,
                    to,
                    kind: "extended-reference",
                    label: format!(
                        "{} {{{}}}, {}",
                        copy.shown_path(),
                        copy.fields.join(", "),
                        copy.strategy
                    ),
                });
            }
        }
        if let Some(part) = &spec.part_of {
            if let Some(owner) = index(&part.owner) {
                out.push(Arrow {
                    from: owner,
                    to: from,
                    kind: "part",
                    label: format!(
                        "_id: {} part, same _id (large and cold)",
                        if part.optional { "optional" } else { "one" }
                    ),
                });
            }
        }
        for subset in &spec.subsets {
            if let Some(to) = index(&subset.child) {
                let label = if subset.is_counter() {
                    format!("{}: counter, {}", subset.path, subset.strategy)
                } else {
                    format!(
                        "{}: newest {} by {}, {}",
                        subset.path, subset.max, subset.sort_field, subset.strategy
                    )
                };
                out.push(Arrow {
                    from,
                    to,
                    kind: "subset",
                    label,
                });
            }
        }
    }
    out
}

/// The label of a `#[bucket]`'s parent reference `field`, `None` when `spec` is no bucket of
/// it: a bucket collection's indexes lead with its parent field and say they serve the bucket
/// pattern; the bound is that of its one embedded array (the entries), the order the key-order
/// index's second key.
fn bucket_label(spec: &CollectionSpec, field: &str) -> Option<String> {
    let mut order = None;
    let mut found = false;
    for index in &spec.indexes {
        let bucket = index
            .reasons
            .iter()
            .any(|r| matches!(r, crate::IndexReason::Bucket { .. }));
        if !bucket || index.keys.keys().next().map(String::as_str) != Some(field) {
            continue;
        }
        found = true;
        if index.reasons.iter().any(
            |r| matches!(r, crate::IndexReason::Bucket { purpose } if purpose.contains("order")),
        ) {
            order = index.keys.keys().nth(1).cloned();
        }
    }
    if !found {
        return None;
    }
    let bound = match spec.embeds.as_slice() {
        [entries] => format!(" of ≤ {} {}", entries.max, entries.path),
        _ => String::new(),
    };
    let order = order.map_or(String::new(), |key| format!(", by {key}"));
    Some(format!("{field}: buckets{bound}{order}"))
}

/// A label in at most two lines: split before its strategy (after the last `, `) when long.
fn label_lines(label: &str) -> Vec<String> {
    match label.rsplit_once(", ") {
        Some((head, tail)) if label.chars().count() > 30 => {
            vec![escape(&format!("{head},")), escape(tail)]
        }
        _ => vec![escape(label)],
    }
}

fn tspans(lines: &[String], x: i64) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            format!(
                r#"<tspan x="{x}" dy="{}">{line}</tspan>"#,
                if i == 0 { 0 } else { 13 }
            )
        })
        .collect()
}

fn diagram(schema: &Schema, out: &mut String) {
    let specs = schema.collections();
    let columns = match specs.len() {
        0..=3 => specs.len().max(1),
        4 => 2,
        _ => 3,
    };
    // the collection with the most relationships in the middle of the first row, where the
    // most boxes are its neighbours, the others in the schema's order
    let arrows = arrows(schema);
    let degree = |i: usize| arrows.iter().filter(|a| a.from == i || a.to == i).count();
    let mut order: Vec<usize> = (0..specs.len()).collect();
    if let Some(hub) = (0..specs.len()).max_by_key(|&i| (degree(i), usize::MAX - i)) {
        order.retain(|&i| i != hub);
        order.insert((columns / 2).min(order.len()), hub);
    }
    // rows as tall as their tallest box
    let mut placed = vec![
        Placed {
            x: 0,
            y: 0,
            height: 0
        };
        specs.len()
    ];
    let mut y = MARGIN;
    for row in order.chunks(columns) {
        let tallest = row
            .iter()
            .map(|&i| box_height(&specs[i]))
            .max()
            .unwrap_or(0);
        for (c, &i) in row.iter().enumerate() {
            placed[i] = Placed {
                x: MARGIN + c as i64 * (BOX_WIDTH + GAP_X),
                y,
                height: box_height(&specs[i]),
            };
        }
        y += tallest + GAP_Y;
    }
    let width = MARGIN * 2 + columns as i64 * BOX_WIDTH + (columns as i64 - 1) * GAP_X;
    let height = y - GAP_Y + MARGIN + 20;
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="collections and relationships" viewBox="0 0 {width} {height}" width="{width}" height="{height}">
<defs>
<marker id="head-reference" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#1f5fa8"/></marker>
<marker id="head-extended-reference" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#b35c00"/></marker>
<marker id="head-bucket" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#6a1b9a"/></marker>
<marker id="head-subset" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#2e7d32"/></marker>
<marker id="head-part" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#00838f"/></marker>
</defs>"##
    );
    // arrows first, so a box hides the part of a line that crosses it; labels last, on top
    let mut labels = String::new();
    for (n, arrow) in arrows.iter().enumerate() {
        let (from, to) = (placed[arrow.from], placed[arrow.to]);
        let label = label_lines(&arrow.label);
        if arrow.from == arrow.to {
            // a loop on the box's right side
            let x = from.x + BOX_WIDTH;
            let y = from.y + 20 + (n as i64 % 4) * 12;
            let _ = writeln!(
                out,
                r#"<g class="relationship {kind}"><path d="M{x},{y} C{a},{y} {a},{b} {x},{b}" marker-end="url(#head-{kind})"/></g>"#,
                kind = arrow.kind,
                a = x + 60,
                b = y + 30,
            );
            let _ = writeln!(
                labels,
                r#"<text x="{lx}" y="{y}" class="label {kind}">{text}</text>"#,
                lx = x + 64,
                kind = arrow.kind,
                text = tspans(&label, x + 64),
            );
            continue;
        }
        // arrows between the same two boxes run side by side
        let pair = |a: &Arrow| (a.from.min(a.to), a.from.max(a.to));
        let siblings: Vec<usize> = arrows
            .iter()
            .enumerate()
            .filter(|(_, a)| a.from != a.to && pair(a) == pair(arrow))
            .map(|(i, _)| i)
            .collect();
        let rank = siblings.iter().position(|&i| i == n).unwrap_or(0) as f64;
        let shift = (rank - (siblings.len() as f64 - 1.0) / 2.0) * 18.0;
        let (tx, ty) = to.centre();
        let (fx, fy) = from.centre();
        let (x1, y1) = from.edge_towards(tx, ty);
        let (x2, y2) = to.edge_towards(fx, fy);
        // the normal of the canonical direction (low index to high), the same for both ways
        let (ax, ay, bx, by) = if arrow.from < arrow.to {
            (x1, y1, x2, y2)
        } else {
            (x2, y2, x1, y1)
        };
        let length = ((bx - ax).powi(2) + (by - ay).powi(2)).sqrt().max(1.0);
        let (nx, ny) = (-(by - ay) / length * shift, (bx - ax) / length * shift);
        let (x1, y1, x2, y2) = (x1 + nx, y1 + ny, x2 + nx, y2 + ny);
        let (mut mx, my) = ((x1 + x2) / 2.0 + nx * 0.6, (y1 + y2) / 2.0 + ny * 0.6 - 4.0);
        // beside a steep line, on the side it was shifted to (the other one's label is on the
        // other side); above a flat one
        let anchor = if (bx - ax).abs() >= (by - ay).abs() {
            "middle"
        } else if nx < 0.0 {
            mx -= 6.0;
            "end"
        } else {
            mx += 6.0;
            "start"
        };
        let _ = writeln!(
            out,
            r#"<g class="relationship {kind}"><line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" marker-end="url(#head-{kind})"/></g>"#,
            kind = arrow.kind,
        );
        let _ = writeln!(
            labels,
            r#"<text x="{mx:.1}" y="{my:.1}" text-anchor="{anchor}" class="label {kind}">{text}</text>"#,
            kind = arrow.kind,
            text = tspans(&label, mx.round() as i64),
        );
    }
    for (spec, place) in specs.iter().zip(&placed) {
        let bound = SizeBound::of(
            &spec
                .validator
                .get_document("$jsonSchema")
                .cloned()
                .unwrap_or_default(),
        );
        let _ = writeln!(
            out,
            r#"<g class="collection" data-collection="{name}"><rect x="{x}" y="{y}" width="{BOX_WIDTH}" height="{h}" rx="6" class="box"/><text x="{tx}" y="{ty}" class="name">{name}</text>"#,
            name = escape(&spec.name),
            x = place.x,
            y = place.y,
            h = place.height,
            tx = place.x + 10,
            ty = place.y + 20,
        );
        let listed = fields(spec);
        for (i, (name, summary)) in listed.iter().take(MAX_FIELDS).enumerate() {
            let embed = spec
                .embeds
                .iter()
                .find(|e| e.path == *name)
                .map_or(String::new(), |e| format!(" (embed ≤ {})", e.max));
            let mut line = format!("{name}: {summary}{embed}");
            if line.chars().count() > 44 {
                line = line.chars().take(43).collect::<String>() + "…";
            }
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" class="field">{}</text>"#,
                place.x + 14,
                place.y + HEADER + 12 + i as i64 * LINE,
                escape(&line)
            );
        }
        if listed.len() > MAX_FIELDS {
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" class="field">… {} more</text>"#,
                place.x + 14,
                place.y + HEADER + 12 + MAX_FIELDS as i64 * LINE,
                listed.len() - MAX_FIELDS
            );
        }
        // the worst case against 16 MiB, at least a visible sliver
        let bar_y = place.y + place.height - BAR;
        let share = bound.bytes as f64 / MAX_DOCUMENT_BYTES as f64;
        let bar_width = BOX_WIDTH - 20;
        let filled = ((share.min(1.0) * bar_width as f64).round() as i64).max(2);
        let class = if bound.exceeds_limit() {
            "bar over"
        } else if !bound.is_known() {
            "bar unknown"
        } else {
            "bar"
        };
        let _ = writeln!(
            out,
            r#"<rect x="{bx}" y="{bar_y}" width="{bar_width}" height="8" class="track"/><rect x="{bx}" y="{bar_y}" width="{filled}" height="8" class="{class}"/><text x="{bx}" y="{ly}" class="size">{worst}{size}{unbounded}: {pct:.3}% of 16 MiB</text></g>"#,
            bx = place.x + 10,
            ly = bar_y + 22,
            size = escape(&crate::human_bytes(bound.bytes)),
            worst = if bound.is_known() {
                "worst case "
            } else {
                "≥ "
            },
            unbounded = if bound.is_known() { "" } else { " (unbounded)" },
            pct = share * 100.0,
        );
    }
    out.push_str(&labels);
    out.push_str("</svg>\n");
}

const STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem; color: #1d1d1f; }
h1 { margin-bottom: 0.2rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.9rem; }
th, td { border: 1px solid #c8c8cc; padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f0f0f3; }
code { font-size: 0.85rem; background: #f4f4f6; padding: 0 0.2rem; }
.diagram { overflow-x: auto; border: 1px solid #ddd; background: #fbfbfd; }
svg text { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
svg .box { fill: #ffffff; stroke: #55555a; stroke-width: 1.5; }
svg .name { font-weight: bold; font-size: 15px; }
svg .field { font-size: 11px; fill: #333; }
svg .size { font-size: 10px; fill: #555; }
svg .track { fill: #e6e6ea; }
svg .bar { fill: #2e7d32; }
svg .bar.over { fill: #c62828; }
svg .bar.unknown { fill: #e08a00; }
svg .label { font-size: 11px; paint-order: stroke; stroke: #fbfbfd; stroke-width: 4px; }
svg .relationship line, svg .relationship path { fill: none; }
svg .reference line, svg .reference path { stroke: #1f5fa8; stroke-width: 1.6; }
svg .extended-reference line, svg .extended-reference path { stroke: #b35c00; stroke-width: 1.6; stroke-dasharray: 6 4; }
svg .subset line, svg .subset path { stroke: #2e7d32; stroke-width: 4; }
svg .bucket line, svg .bucket path { stroke: #6a1b9a; stroke-width: 2.4; stroke-dasharray: 2 3; }
svg .part line, svg .part path { stroke: #00838f; stroke-width: 2.4; stroke-dasharray: 8 3 2 3; }
.legend span { margin-right: 1.5rem; }
.warnings li { margin-bottom: 0.3rem; }
"#;

impl Schema {
    /// The schema report as one self-contained HTML page (no script, nothing loaded from the
    /// network): an SVG diagram of the collections (fields, worst-case size as a bar against
    /// 16 MiB) and their relationships drawn by kind (reference: solid; extended reference:
    /// dashed, with the copied fields and sync strategy; subset: thick, with its bound and
    /// strategy; bucket: dotted, with the entries per bucket and their order; embedded arrays are listed in their box with their bound), seed 003's
    /// checklist for each relationship, each collection's indexes with the reason for each, and
    /// the warnings.
    pub fn report_html(&self) -> String {
        let mut out = String::new();
        let collections = self.collections();
        let all = relationships(self);
        let _ = writeln!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Schema report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
            escape(self.name())
        );
        let _ = writeln!(
            out,
            "<h1>Schema report</h1>\n<p>Schema <code>{}</code>, version {}, fingerprint <code>{}</code>: {} collections, {} relationships, {} copies kept in sync. Generated by mongo-schema from the models' attributes.</p>",
            escape(self.name()),
            self.version().unwrap_or(0),
            escape(&self.fingerprint()),
            collections.len(),
            all.len(),
            self.sync_graph().edges.len()
        );
        out.push_str("<h2>Diagram</h2>\n<p class=\"legend\"><span style=\"color:#1f5fa8\">━ reference</span><span style=\"color:#b35c00\">╌ extended reference (copied fields, sync strategy)</span><span style=\"color:#2e7d32\">▬ subset (bound, strategy) or counter</span><span style=\"color:#6a1b9a\">┅ bucket (entries per bucket, order)</span><span style=\"color:#00838f\">╍ part under the same _id (large and cold)</span><span>bars: worst-case document size against 16 MiB (orange: some field is unbounded, so the bound is a floor)</span></p>\n<div class=\"diagram\">\n");
        diagram(self, &mut out);
        out.push_str("</div>\n<h2>Warnings</h2>\n");
        let warnings = warnings(self);
        if warnings.is_empty() {
            out.push_str("<p>None.</p>\n");
        } else {
            out.push_str("<ul class=\"warnings\">\n");
            for warning in &warnings {
                let _ = writeln!(out, "<li>{}</li>", inline(warning));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("<h2>Relationships: seed 003's checklist</h2>\n<table class=\"checklist\">\n<tr><th>holder.path</th><th>outcome</th><th>other side</th><th>bound</th><th>read path</th><th>copies and sync</th><th>atomicity</th><th>shard routing</th></tr>\n");
        for r in &all {
            let _ = writeln!(
                out,
                "<tr data-relationship=\"{}.{}\"><td><code>{}.{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&r.holder),
                escape(&r.path),
                escape(&r.holder),
                escape(&r.path),
                escape(r.outcome),
                inline(&r.other),
                inline(&r.bound),
                inline(&r.read_path),
                inline(&r.copies),
                inline(&r.atomicity),
                inline(&r.routing)
            );
        }
        out.push_str("</table>\n<h2>Indexes</h2>\n");
        for spec in collections {
            let _ = writeln!(
                out,
                "<h3 id=\"collection-{0}\"><code>{0}</code></h3>\n<table class=\"indexes\">\n<tr><th>index</th><th>keys</th><th>options</th><th>why</th></tr>\n<tr><td><code>_id_</code></td><td><code>{{ _id: 1 }}</code></td><td>unique</td><td>every collection</td></tr>",
                escape(&spec.name)
            );
            for index in &spec.indexes {
                let options = index_options(index, ToString::to_string);
                let reasons: Vec<String> = index
                    .reasons
                    .iter()
                    .map(|r| inline(&r.to_string()))
                    .collect();
                let _ = writeln!(
                    out,
                    "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    escape(&index.name),
                    escape(&index.keys.to_string()),
                    escape(&options.join(", ")),
                    reasons.join("<br>")
                );
            }
            out.push_str("</table>\n");
        }
        out.push_str("</body>\n</html>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{escape, inline};

    #[test]
    fn text_is_escaped_and_code_marked() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(inline("the `a<b` field"), "the <code>a&lt;b</code> field");
    }
}
