use super::*;
use crate::IndexSpec;
use mongodb::bson::doc;

#[test]
fn a_downgrade_holds_back_index_drops() {
    let drop = Action::DropIndex {
        collection: "c".into(),
        name: "v2_index".into(),
        keys: doc! { "x": 1 },
    };
    let create = Action::CreateIndexes {
        collection: "c".into(),
        indexes: vec![IndexSpec::new(doc! { "y": 1 })],
    };
    let mut plan = Plan {
        actions: vec![create.clone(), drop.clone()],
        ..Plan::default()
    };
    hold_back_drops(
        &mut plan,
        &VersionStatus::Upgrade {
            recorded: 1,
            applying: 2,
        },
    );
    assert_eq!(plan.actions.len(), 2);
    hold_back_drops(
        &mut plan,
        &VersionStatus::Downgrade {
            recorded: 2,
            applying: 1,
        },
    );
    assert_eq!(plan.actions, [create]);
    assert!(matches!(
        &plan.warnings[..],
        [Warning::DropsHeldBack { recorded: 2, applying: 1, indexes }] if indexes == &["c.v2_index"]
    ));
}
