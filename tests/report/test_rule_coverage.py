"""Every reporting rule that the schema cannot express (``schema: false`` in
spec/rules/reporting.json) is pinned by named tests in tests/report that fail when the
rule is broken; this table says which, and this test keeps the table honest."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from tests.conftest import SPEC

HERE = Path(__file__).resolve().parent

RULE_TESTS: dict[str, list[str]] = {
    "report.settings.url_missing": [
        "test_a_missing_url_is_refused",
        "test_paths_toml_without_a_report_section_is_refused",
    ],
    "report.settings.toml": [
        "test_paths_toml_that_is_not_toml_has_its_own_rule",
        "test_paths_toml_without_a_report_section_is_refused",
        "test_a_paths_toml_that_cannot_be_read_is_refused_naming_it",
    ],
    "report.settings.token": [
        "test_the_token_in_the_url_is_refused_without_showing_it",
        "test_the_token_in_the_url_is_refused_alike_however_settings_are_made",
        "test_a_missing_or_unusable_token_is_refused",
        "test_load_settings_without_the_token_variable_raises",
        "test_a_token_in_paths_toml_is_refused_and_not_shown",
        "test_a_token_in_paths_toml_under_any_name_is_refused_without_showing_it",
    ],
    "report.settings.url_scheme": [
        "test_unsafe_urls_are_refused",
        "test_safe_urls_are_accepted",
        "test_a_url_with_a_bad_host_character_is_refused",
        "test_a_refused_url_shows_no_query_value_or_fragment",
        "test_a_url_without_scheme_and_host_is_not_shown",
    ],
    "report.settings.url_credentials": [
        "test_urls_with_credentials_are_refused_without_showing_them"
    ],
    "report.settings.ca_bundle": [
        "test_a_missing_ca_bundle_is_refused",
        "test_a_missing_ca_bundle_variable_is_refused_by_load_settings",
    ],
    "report.settings.every": [
        "test_every_must_be_a_positive_number",
        "test_serve_refuses_an_every_that_is_not_a_finite_number_above_0",
        "test_a_tiny_every_is_allowed",
    ],
    "report.settings.unknown_key": [
        "test_an_unknown_report_key_is_refused_naming_the_closest_known_key",
        "test_every_unknown_key_is_listed_at_once",
    ],
    "report.transport.post_url": [
        "test_post_goes_to_the_url_as_configured_with_exactly_three_headers",
        "test_the_request_target_is_the_url_exactly_as_configured",
    ],
    "report.transport.headers": [
        "test_post_goes_to_the_url_as_configured_with_exactly_three_headers"
    ],
    "report.transport.body": [
        "test_encode_refuses_non_finite_numbers",
        "test_encoded_body_is_compact_utf8_json_that_round_trips",
        "test_an_unsendable_job_raises_before_any_work_starts",
    ],
    "report.transport.tls_verify": [
        "test_tls_with_an_untrusted_certificate_sends_nothing",
        "test_tls_with_a_trusted_ca_gets_through",
        "test_https_to_a_plain_server_never_sends_the_token_in_clear",
    ],
    "report.transport.no_redirect": [
        "test_redirects_are_never_followed_and_the_target_gets_nothing"
    ],
    "report.transport.timeout": [
        "test_a_hanging_server_is_a_timeout",
        "test_the_client_timeout_is_10_seconds_by_default",
        "test_a_server_dripping_its_answer_is_cut_at_the_deadline",
    ],
    "report.transport.no_retry": [
        "test_a_failed_report_is_not_retried",
        "test_each_status_class_has_its_meaning",
    ],
    "report.transport.status": [
        "test_each_status_class_has_its_meaning",
        "test_the_warnings_differ_per_class",
        "test_garbage_or_a_closed_connection_is_a_failure",
    ],
    "report.transport.one_warning": ["test_one_warning_then_quiet_until_a_report_gets_through"],
    "report.transport.snapshot_raises": [
        "test_report_status_raises_with_the_status_and_300_characters",
        "test_report_status_raises_on_a_timeout",
        "test_report_status_never_raises_with_the_token_a_server_echoes",
        "test_the_body_is_scrubbed_before_it_is_cut",
    ],
    "report.transport.never_slows": [
        "test_calls_never_wait_for_a_hanging_server",
        "test_only_the_newest_unsent_report_is_kept",
        "test_the_process_never_hangs_at_exit_on_a_hanging_server",
    ],
    "report.seq.increasing": [
        "test_processes_racing_on_one_run_never_repeat_a_seq",
        "test_resume_keeps_the_run_id_and_seq_keeps_rising",
        "test_seq_is_the_send_time_in_ms_and_strictly_increasing",
        "test_seq_rises_across_resumes_when_the_clock_stands_still_or_steps_back",
        "test_a_resumed_run_sends_started_again_with_the_same_run_id",
    ],
    "report.run_id.stable": [
        "test_resume_keeps_the_run_id_and_seq_keeps_rising",
        "test_a_fresh_folder_gets_a_new_uuid4_run_id_in_metadata_json",
        "test_resume_keeps_the_run_id_started_at_and_every_field",
        "test_a_deleted_folder_gets_a_new_run_id",
        "test_metadata_the_job_wrote_first_gets_a_run_id_and_keeps_its_fields",
        "test_update_keeps_the_run_id_and_refuses_another",
        "test_a_resumed_run_sends_started_again_with_the_same_run_id",
        "test_a_discarded_run_starts_again_as_a_new_run",
    ],
    "report.run_id.one_winner": ["test_processes_starting_one_folder_at_once_agree_on_one_run_id"],
    "report.metadata.json": [
        "test_a_bad_metadata_json_is_refused_and_left_as_it_is",
        "test_metadata_that_is_not_strict_json_writes_nothing",
    ],
    "report.metadata.run_id": ["test_a_bad_metadata_json_is_refused_and_left_as_it_is"],
    "report.status.discarded": [
        "test_ctrl_c_before_the_first_epoch_discards_a_new_training_run_and_its_folder",
        "test_ctrl_c_never_deletes_a_resumed_run",
        "test_asking_to_discard_a_resumed_run_keeps_it_and_says_why",
        "test_a_lesion_run_or_word_set_is_interrupted_not_discarded",
        "test_a_new_run_with_a_finished_epoch_is_interrupted_and_kept",
        "test_without_its_run_folder_a_run_is_never_reported_discarded",
        "test_the_folder_is_deleted_at_once_even_while_the_server_hangs",
    ],
    "report.status.sigterm": [
        "test_sigterm_sends_interrupted_and_the_process_still_dies_of_sigterm",
        "test_a_sigterm_handler_the_user_installed_is_left_alone",
        "test_the_handler_is_there_only_while_the_reporter_is_active",
        "test_a_hanging_server_delays_the_death_by_at_most_the_flush_bound",
    ],
    "report.consistency.event_status": [
        "test_inconsistent_reports_are_refused_with_their_rule",
        "test_every_event_of_every_kind_builds_a_valid_report",
    ],
    "report.consistency.error": ["test_inconsistent_reports_are_refused_with_their_rule"],
    "report.consistency.finished_at": ["test_inconsistent_reports_are_refused_with_their_rule"],
    "report.consistency.epochs_completed": [
        "test_inconsistent_reports_are_refused_with_their_rule"
    ],
    "report.consistency.eta": [
        "test_inconsistent_reports_are_refused_with_their_rule",
        "test_eta_is_null_until_the_first_epoch_and_when_not_running",
    ],
    "report.consistency.fraction": [
        "test_a_snapshot_s_fraction_counts_only_the_finished_epochs",
        "test_fraction_is_what_the_report_s_own_progress_fields_give",
    ],
    "report.consistency.lesioned_units": [
        "test_lesioned_units_must_ascend_and_the_word_channel_must_be_ordered"
    ],
    "report.consistency.no_words": [
        "test_a_pre_or_illit_report_with_word_results_is_refused",
        "test_report_status_refuses_a_pre_run_with_word_results_and_sends_nothing",
        "test_the_receiver_stores_what_the_client_refuses",
        "test_a_pre_run_s_word_results_are_sent_as_null_with_a_warning",
        "test_a_kept_history_is_fitted_to_the_config_on_resume",
    ],
    "report.consistency.pre_name": [
        "test_a_pre_report_with_a_pre_name_is_refused",
        "test_a_config_that_breaks_a_rule_is_refused_before_work_starts",
    ],
    "report.consistency.history_order": [
        "test_a_history_not_oldest_first_is_refused",
        "test_an_epoch_not_after_the_last_is_left_out_and_complete_arrives",
    ],
    "report.consistency.word_channel": [
        "test_an_unbiased_lesion_with_a_word_channel_is_refused",
        "test_a_config_that_breaks_a_rule_is_refused_before_work_starts",
    ],
    "report.consistency.mean_word_activation_lesioned": [
        "test_a_mean_over_no_lesioned_units_is_refused",
        "test_a_lesion_without_units_sends_no_mean_and_leaves_out_an_impossible_count",
    ],
    "report.consistency.word_selective_lesioned": [
        "test_more_word_selective_lesioned_units_than_lesioned_units_is_refused",
        "test_a_lesion_without_units_sends_no_mean_and_leaves_out_an_impossible_count",
    ],
    "report.consistency.words_done": [
        "test_a_snapshot_of_an_unfinished_word_set_has_no_words_done",
        "test_the_word_set_s_own_reports_carry_words_done",
    ],
    "report.privacy.secrets": [
        "test_privacy_problems_find_each_secret",
        "test_a_failed_job_sends_no_secret",
        "test_scrub_message",
        "test_a_config_with_a_path_is_refused_before_work_starts",
        "test_every_common_form_of_a_process_id_is_scrubbed_and_checked",
        "test_one_part_absolute_paths_are_scrubbed_and_refused",
        "test_text_that_is_not_an_absolute_path_is_left_as_it_is",
        "test_short_user_names_are_scrubbed_as_whole_words",
        "test_a_one_character_user_name_is_scrubbed_only_as_a_path_part",
        "test_a_failed_job_sends_no_worker_pid_short_user_or_one_part_path",
        "test_file_urls_are_scrubbed_as_their_paths",
        "test_a_file_url_in_a_failed_job_sends_neither_home_nor_user",
    ],
    "report.privacy.fields": [
        "test_fill_helpers_give_every_field_and_refuse_unknown_ones",
        "test_encode_refuses_what_the_schema_refuses_naming_the_rule_and_field",
    ],
    "report.server.auth": [
        "test_a_missing_or_bad_token_is_401",
        "test_reads_need_the_token_too",
        "test_the_bearer_scheme_is_case_insensitive",
        "test_white_space_after_the_token_is_not_part_of_it",
    ],
    "report.server.too_large": [
        "test_a_body_over_256_kb_is_413_before_it_is_read",
        "test_exactly_256_kb_is_not_413",
        "test_a_missing_content_length_is_411",
        "test_a_client_sending_a_body_over_256_kb_over_tls_reads_the_413",
        "test_a_content_length_far_over_the_drain_limit_is_413_without_reading_it",
    ],
    "report.server.content_type": ["test_a_wrong_content_type_is_415"],
    "report.server.not_json": ["test_a_body_that_is_not_strict_json_is_400"],
    "report.server.invalid": ["test_a_report_that_fails_the_schema_is_422_with_the_problems"],
    "report.server.newest_wins": [
        "test_out_of_order_and_duplicate_delivery_ends_at_the_max_seq",
        "test_concurrent_posts_never_let_an_older_report_win",
        "test_old_and_duplicate_reports_are_200_and_not_stored",
    ],
    "report.server.no_contact": ["test_a_silent_run_in_progress_shows_no_contact"],
    "report.server.plain_http_loopback": [
        "test_plain_http_is_refused_off_loopback",
        "test_serve_refuses_plain_http_off_loopback",
    ],
}


def _test_names() -> set[str]:
    names: set[str] = set()
    for path in HERE.glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names.update(
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
        )
    return names


def test_every_non_schema_rule_has_tests_and_they_exist() -> None:
    rules = json.loads((SPEC / "rules" / "reporting.json").read_text(encoding="utf-8"))["rules"]
    non_schema = {r["id"] for r in rules if r.get("schema") is False}
    assert set(RULE_TESTS) == non_schema
    known = _test_names()
    missing = {name for names in RULE_TESTS.values() for name in names} - known
    assert not missing, f"tests named in RULE_TESTS that do not exist: {sorted(missing)}"
