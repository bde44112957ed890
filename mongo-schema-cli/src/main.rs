//! `mongo-schema`: see the library's documentation (`mongo_schema_cli`).

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    mongo_schema_cli::run(mongo_schema_cli::Cli::parse()).await
}
