use std::collections::BTreeMap;

use super::measures::expected;
use crate::options::testing::spawned as options;
use crate::{node, setup};

#[test]
fn expected_rates_follow_the_plan() {
    let o = options(&["--users", "1000", "--files", "100"]);
    let e = expected(&setup::plan(&o), &o);
    assert_eq!(e.patches_sent_per_s, 200.0); // 100 editors at 2/s
    assert_eq!(e.presence_sent_per_s, 20_000.0);
    assert_eq!(e.patches_received_per_s, 1800.0); // each to 9 others
}

#[test]
fn spawned_nodes_get_room_for_one_address_and_user_settings_win() {
    let o = options(&["--per-account", "40", "--env", "ATRIUM_WS_PER_IP=7"]);
    let env: BTreeMap<_, _> = node::spawn_env(&o).into_iter().collect();
    assert_eq!(env["ATRIUM_HEALTH_STATS"], "1");
    assert_eq!(env["ATRIUM_WS_PER_IP"], "7");
    assert_eq!(env["ATRIUM_WS_PER_ACCOUNT"], "40");
    assert_eq!(env["ATRIUM_AUTH_PER_IP_PER_MINUTE"], "1000000");
}
