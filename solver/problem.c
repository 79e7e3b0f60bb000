/* placeholder: being written */
typedef int tw_placeholder_problem;
