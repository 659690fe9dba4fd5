/*
 * Every test, once: TEST_ENTRY(name, timeout_seconds) names the function
 * void test_<name>(void). The includer defines TEST_ENTRY; this file has no
 * include guard on purpose. The shell scripts in tests/cli are found at run
 * time and are not listed here.
 */

/* Unit tests: no server. */
TEST_ENTRY(backoff_deadline, 5)
TEST_ENTRY(backoff_pause_jitter_range, 5)
TEST_ENTRY(backoff_pause_capped_by_holder_ttl, 5)
TEST_ENTRY(backoff_pause_capped_by_deadline, 5)
TEST_ENTRY(backoff_pause_never_negative, 5)
TEST_ENTRY(backoff_pause_wait_forever, 5)
TEST_ENTRY(backoff_retry_delay_growth, 5)
TEST_ENTRY(rand_token_format, 5)
TEST_ENTRY(rand_tokens_differ, 5)
TEST_ENTRY(rand_jitter_varies, 5)
TEST_ENTRY(error_strerror_every_code, 5)
TEST_ENTRY(error_errname_every_code, 5)
TEST_ENTRY(error_unknown_codes, 5)
TEST_ENTRY(error_errdetail_never_null, 5)
TEST_ENTRY(version_matches_macros, 5)

/* The harness itself. */
TEST_ENTRY(harness_server_basics, 30)
TEST_ENTRY(harness_multiple_servers, 30)

/* Integration tests: each starts its own redis-server. */
TEST_ENTRY(lock_acquire_sets_token_and_ttl, 30)
TEST_ENTRY(lock_second_handle_gets_eheld, 30)
TEST_ENTRY(lock_release_frees_key, 30)
TEST_ENTRY(lock_extend_resets_ttl, 30)
TEST_ENTRY(lock_ttl_reports_state, 30)
TEST_ENTRY(lock_adopt_acts_for_token, 30)
TEST_ENTRY(lock_wait_deadline_returns_eheld, 30)
TEST_ENTRY(lock_wait_succeeds_on_release, 30)
TEST_ENTRY(lock_wait_succeeds_on_expiry, 30)
TEST_ENTRY(lock_wait_forever_succeeds, 30)
TEST_ENTRY(lock_release_without_token_einval, 30)

TEST_ENTRY(expiry_release_returns_eexpired, 30)
TEST_ENTRY(expiry_extend_does_not_recreate, 30)
TEST_ENTRY(expiry_release_spares_next_owner, 30)
TEST_ENTRY(expiry_extend_spares_next_owner, 30)

TEST_ENTRY(script_noscript_release_fallback, 30)
TEST_ENTRY(script_noscript_extend_fallback, 30)
TEST_ENTRY(script_round_trips, 30)

TEST_ENTRY(concurrency_counter_processes, 180)
TEST_ENTRY(concurrency_counter_threads, 180)

TEST_ENTRY(interop_redispy_holds, 60)
TEST_ENTRY(interop_redispy_sees_our_lock, 60)
TEST_ENTRY(interop_redispy_after_our_release, 60)

TEST_ENTRY(input_key_length, 30)
TEST_ENTRY(input_null_args, 30)
TEST_ENTRY(input_key_binary_safe, 30)
TEST_ENTRY(input_acquire_ttl_range, 30)
TEST_ENTRY(input_extend_ttl_range, 30)
TEST_ENTRY(input_wrong_token_elost, 30)

TEST_ENTRY(url_malformed_einval, 30)
TEST_ENTRY(url_db_out_of_range, 30)
TEST_ENTRY(url_db_selects, 30)
TEST_ENTRY(url_rediss_enotls, 30)
TEST_ENTRY(url_refused_econnect, 30)

TEST_ENTRY(auth_wrong_password_eauth, 30)
TEST_ENTRY(auth_password_in_url, 30)
TEST_ENTRY(auth_password_env_and_option, 30)
TEST_ENTRY(auth_acl_user, 30)

TEST_ENTRY(timeout_stopped_server_tcp, 60)
TEST_ENTRY(timeout_stopped_server_unix, 60)

TEST_ENTRY(reentrant_acquire_twice_holds_two, 30)
TEST_ENTRY(reentrant_shared_owner_id, 30)
TEST_ENTRY(reentrant_release_on_other_thread, 30)
TEST_ENTRY(reentrant_plain_acquire_twice_einval, 30)
TEST_ENTRY(reentrant_wrong_token_release_elost, 30)
TEST_ENTRY(reentrant_metadata_inspect, 30)
TEST_ENTRY(reentrant_property_random_ops, 120)

TEST_ENTRY(watchdog_contender_never_wins, 60)
TEST_ENTRY(watchdog_takeover_signals_elost, 30)
TEST_ENTRY(watchdog_stopped_server_signals_loss, 30)
TEST_ENTRY(watchdog_no_renewals_after_release, 30)
TEST_ENTRY(watchdog_deleted_key_not_recreated, 30)
TEST_ENTRY(watchdog_max_renewals_cap, 30)
TEST_ENTRY(watchdog_max_hold_cap, 30)
TEST_ENTRY(watchdog_validity_after_acquire, 30)
TEST_ENTRY(watchdog_one_thread_many_locks, 30)

TEST_ENTRY(retry_constant_pauses, 30)
TEST_ENTRY(retry_linear_pauses, 30)
TEST_ENTRY(retry_exponential_pauses, 30)
TEST_ENTRY(retry_exponential_capped, 30)
TEST_ENTRY(retry_max_attempts_hash_lock, 30)
TEST_ENTRY(retry_custom_fn_sees_attempts, 30)
TEST_ENTRY(retry_none_returns_at_once, 30)
TEST_ENTRY(retry_fail_fast, 30)
TEST_ENTRY(retry_fail_fast_waits_for_short_holder, 30)
TEST_ENTRY(retry_pause_capped_by_holder_ttl, 30)
TEST_ENTRY(retry_holder_ttl_after_eheld, 30)
TEST_ENTRY(retry_cancel_wakes_waiter, 30)
TEST_ENTRY(retry_cancel_before_acquire, 30)
TEST_ENTRY(retry_shared_client_counter, 120)

/* Hold-after, metadata and listing, sharding, legacy recipes. */
TEST_ENTRY(holdafter_reserves_then_frees, 30)
TEST_ENTRY(holdafter_zero_is_plain_release, 30)
TEST_ENTRY(holdafter_bad_values_einval, 30)
TEST_ENTRY(holdafter_reentrant_last_hold, 30)
TEST_ENTRY(holdafter_expired_eexpired, 30)
TEST_ENTRY(holdafter_lost_spares_next_owner, 30)
TEST_ENTRY(meta_inspect_metadata_default_owner, 30)
TEST_ENTRY(meta_inspect_explicit_owner, 30)
TEST_ENTRY(meta_inspect_plain_and_free, 30)
TEST_ENTRY(meta_prefix_applied_to_key, 30)
TEST_ENTRY(meta_prefixes_do_not_conflict, 30)
TEST_ENTRY(meta_prefix_glob_chars_literal, 30)
TEST_ENTRY(meta_list_exact_set, 30)
TEST_ENTRY(meta_list_callback_stops, 30)
TEST_ENTRY(meta_list_empty_server, 30)
TEST_ENTRY(meta_list_many_exactly_once, 60)
TEST_ENTRY(shard_spread_one_server_each, 60)
TEST_ENTRY(shard_order_independent, 60)
TEST_ENTRY(shard_added_server_moves_few, 60)
TEST_ENTRY(shard_duplicate_server_einval, 30)
TEST_ENTRY(shard_dead_server_econnect, 30)
TEST_ENTRY(shard_release_extend_watchdog, 60)
TEST_ENTRY(legacy_setnx_expire_eternal_lock, 30)
TEST_ENTRY(legacy_acquire_always_sets_ttl, 60)
TEST_ENTRY(legacy_killed_holder_expires, 30)
TEST_ENTRY(legacy_getset_skewed_clocks, 30)
TEST_ENTRY(legacy_one_winner_server_ttl, 60)
TEST_ENTRY(legacy_del_unlock, 30)
TEST_ENTRY(legacy_fixed_delay_herd, 90)
TEST_ENTRY(shard_order_independent_same_server_dbs, 30)
TEST_ENTRY(reentrant_watched_reacquire, 30)
TEST_ENTRY(watchdog_check_from_other_thread, 30)

/* A misbehaving server (harness/fakeserver.c): no crash, no hang past the
 * timeout, no false success, bounded memory. */
TEST_ENTRY(badserver_ok_to_everything, 60)
TEST_ENTRY(badserver_wrong_reply_types, 60)
TEST_ENTRY(badserver_bad_lengths, 90)
TEST_ENTRY(badserver_partial_then_silence, 90)
TEST_ENTRY(badserver_close_mid_reply, 60)
TEST_ENTRY(badserver_slow_valid_reply, 60)
TEST_ENTRY(badserver_slow_reply_bounded, 90)
TEST_ENTRY(badserver_error_replies, 60)
TEST_ENTRY(badserver_noperm_eauth, 60)
TEST_ENTRY(badserver_noscript_forever, 60)
TEST_ENTRY(badserver_reconnects_after_failure, 60)
TEST_ENTRY(badserver_unsolicited_reply, 60)
TEST_ENTRY(badserver_set_status_not_ok, 60)
TEST_ENTRY(badserver_extreme_holder_ttl, 60)
TEST_ENTRY(badserver_stream_bounded, 90)

/* Waiting without polling: woken by the release, bounded by the holder's
 * lease, one waiter per release, no leftovers (test_wake.c). */
TEST_ENTRY(wake_release_wakes_waiter, 60)
TEST_ENTRY(wake_blocked_waiter_is_silent, 30)
TEST_ENTRY(wake_one_release_one_waiter, 60)
TEST_ENTRY(wake_killed_holder_costs_ttl, 30)
TEST_ENTRY(wake_missed_wakeup_bounded, 30)
TEST_ENTRY(wake_no_leftovers, 90)
TEST_ENTRY(wake_cancel_blocked_waiter, 30)
TEST_ENTRY(wake_waiters_leave_pool_free, 30)

/* Fair (FIFO) waiting: order, direct hand-off, dead and departing
 * waiters, hash locks, alternation, no leftovers (test_fair.c). */
TEST_ENTRY(fair_fifo_order, 60)
TEST_ENTRY(fair_handoff_is_direct, 30)
TEST_ENTRY(fair_dead_waiter_bounded, 60)
TEST_ENTRY(fair_timeout_leaves_queue, 30)
TEST_ENTRY(fair_leave_passes_handoff_on, 30)
TEST_ENTRY(fair_metadata_handoff, 30)
TEST_ENTRY(fair_same_owner_not_reentrant, 30)
TEST_ENTRY(fair_holders_alternate, 150)
TEST_ENTRY(fair_no_leftovers, 90)
TEST_ENTRY(badserver_huge_array_count, 60)

/* Faults around a real server: a killed holder, stalls, wall-clock jumps
 * (libfaketime), restarts with and without an append-only file. */
TEST_ENTRY(faults_killed_holder_next_waiter, 60)
TEST_ENTRY(faults_server_sigstop, 60)
TEST_ENTRY(faults_client_pause, 60)
TEST_ENTRY(faults_debug_sleep, 60)
TEST_ENTRY(faults_clock_probe, 60)
TEST_ENTRY(faults_wallclock_plus2d, 60)
TEST_ENTRY(faults_wallclock_minus1h, 60)
TEST_ENTRY(faults_wallclock_jump_forward, 60)
TEST_ENTRY(faults_wallclock_jump_back, 60)
TEST_ENTRY(faults_restart_no_persistence, 60)
TEST_ENTRY(faults_restart_aof, 60)
TEST_ENTRY(fence_grows_across_owners, 30)
TEST_ENTRY(fence_reentry_and_restart, 30)
TEST_ENTRY(fence_fenced_set, 30)
TEST_ENTRY(fence_paused_holder_unfenced_loses_updates, 60)
TEST_ENTRY(fence_paused_holder_fenced_refused, 60)

/* The minimal ACL of docs/ACL.md: every feature as a restricted user,
 * each command needed, keys outside the pattern refused; no password in
 * any error's detail (test_acl.c). */
TEST_ENTRY(acl_minimal_lifecycle, 60)
TEST_ENTRY(acl_each_command_needed, 240)
TEST_ENTRY(acl_key_outside_pattern_eauth, 30)
TEST_ENTRY(acl_select_nonzero_db, 30)
TEST_ENTRY(acl_errdetail_hides_password, 30)
TEST_ENTRY(acl_url_slash_password_hidden, 30)

/* An acquire held up in the network past its timeout: the ghost lock it
 * takes on arrival is freed by the abandon, or refused (test_ghost.c). */
TEST_ENTRY(ghost_proxy_delays_requests, 30)
TEST_ENTRY(ghost_acquire_freed_after_delay, 30)
TEST_ENTRY(ghost_arrives_before_abandon, 30)
TEST_ENTRY(ghost_arrives_after_abandon, 30)
TEST_ENTRY(ghost_abandon_script_not_cached, 30)
TEST_ENTRY(tls_lock_over_rediss, 60)
TEST_ENTRY(tls_refuses_unverified_server, 60)

/* Redis Cluster: each test starts a cluster of its own. */
TEST_ENTRY(cluster_keys_spread_over_slots, 120)
TEST_ENTRY(cluster_lock_features, 60)
TEST_ENTRY(cluster_key_refused, 60)
TEST_ENTRY(cluster_counter_processes, 120)
TEST_ENTRY(cluster_slot_migration, 90)
TEST_ENTRY(cluster_failover, 90)
