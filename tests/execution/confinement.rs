//! What a sandboxed command can see and touch.

use crate::support::*;
use spear::harness::primitives::ToolStatus;

#[tokio::test]
async fn a_command_runs_in_the_workspace_with_a_private_home_and_tmp() {
    let (_d, ws) = workspace();
    let r = runner(&ws);
    let res = run(
        &r,
        read_only(),
        "echo pwd=$PWD; echo home=$HOME; echo tmp=$TMPDIR; id -u",
    )
    .await;
    assert_eq!(res.status, ToolStatus::Ok, "{res:?}");
    assert!(
        res.stdout.contains(&format!("pwd={}", ws.display())),
        "{res:?}"
    );
    assert_eq!(res.exit_code, Some(0));
}
