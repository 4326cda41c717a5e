# The course at scale (issue 21): `ol dist` (the student release and the
# Gradescope autograder), `ol grade` (a class at once), and ol check's
# reports read by the official tools. Their tests: test-release,
# test-reports, test-grade (tests/ol/release.sh, reports.sh, grade.sh).
#
# `make report-viewer` installs Stryker's viewer (mutation-testing-elements,
# pinned by tools/ol/report-viewer/package-lock.json) into
# build/npm/report-viewer: `ol check --html` inlines it, `ol dist` ships it.

VIEWER_BUNDLE := node_modules/mutation-testing-elements/dist/mutation-test-elements.js
REPORT_VIEWER := $(BUILD)/npm/report-viewer/$(VIEWER_BUNDLE)

.PHONY: report-viewer test-release test-reports test-grade
report-viewer: $(REPORT_VIEWER)
$(REPORT_VIEWER): tools/ol/report-viewer/package-lock.json
	@bash tests/ol/npm_ci.sh tools/ol/report-viewer $(BUILD)/npm/report-viewer $(VIEWER_BUNDLE)
	@touch $@

TEST_TARGETS += test-release test-reports test-grade

test-release: $(OL_BIN) $(CORE_LIB) $(TESTING_LIB) $(REPORT_VIEWER)
	@echo "== the student release (ol dist, tests/ol/release.sh) =="
	@bash tests/ol/release.sh $(OL_BIN)

test-reports: $(OL_BIN) $(CORE_LIB) $(TESTING_LIB) $(REPORT_VIEWER)
	@echo "== ol check's reports: the official schema (ajv), Chromium (tests/ol/reports.sh) =="
	@bash tests/ol/reports.sh $(OL_BIN)

test-grade: $(OL_BIN) $(CORE_LIB) $(TESTING_LIB) $(REPORT_VIEWER)
	@echo "== batch grading and the Gradescope autograder (tests/ol/grade.sh) =="
	@bash tests/ol/grade.sh $(OL_BIN)
