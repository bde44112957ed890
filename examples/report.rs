//! Writes the help desk's schema report (Markdown, with its Mermaid diagram) and the equivalent
//! mongosh script.
//!
//! ```text
//! cargo run --example report                  # writes docs/helpdesk-report.md and docs/helpdesk-setup.js
//! cargo run --example report -- out/dir       # elsewhere
//! ```

#[path = "helpdesk/model.rs"]
mod model;

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/docs").to_owned());
    std::fs::create_dir_all(&dir)?;
    let schema = model::schema();
    let report = schema.report();
    let script = schema.mongosh_script();
    let report_path = std::path::Path::new(&dir).join("helpdesk-report.md");
    let script_path = std::path::Path::new(&dir).join("helpdesk-setup.js");
    std::fs::write(&report_path, &report)?;
    std::fs::write(&script_path, &script)?;
    println!(
        "wrote {} ({} lines) and {} ({} lines)",
        report_path.display(),
        report.lines().count(),
        script_path.display(),
        script.lines().count()
    );
    let warnings = report
        .split("## Warnings")
        .nth(1)
        .and_then(|w| w.split("\n## ").next())
        .unwrap_or("")
        .trim();
    println!("warnings:\n{warnings}");
    Ok(())
}
