/* commands: the entry point of each `ol` command, one file each (cmd_*.c).
 * argv[0] is "ol NAME"; each returns the exit status (util.h). */
#ifndef OL_COMMANDS_H
#define OL_COMMANDS_H

int cmd_list(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_tests(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_mutants(int argc, char **argv);
int cmd_fixtures(int argc, char **argv);
int cmd_hub(int argc, char **argv);
int cmd_dist(int argc, char **argv);
int cmd_grade(int argc, char **argv);
int cmd_lesson(int argc, char **argv);
int cmd_tinyllm(int argc, char **argv);
int cmd_milestone(int argc, char **argv);

#endif
