/*
 * cli/cmd-completion.c - poolctl completion bash: a bash completion script
 * for poolctl, written from its command table, so that a command added to
 * the table completes with no list kept by hand (make writes the script
 * at build time as cli/poolctl.bash; it is installed in bash-completion's
 * folder).
 *
 * Each command becomes a line of the script's table: its words, what each
 * of its arguments completes with, and its options. An argument's kind
 * comes from its word in the synopsis: FILE and SOCKET complete as files,
 * NODE as the node ids `poolctl nodes` lists, NS as the KV namespaces, and
 * NAME as the names of its family's listing (snap, region, vec) unless the
 * command makes that name (create, put, save); others complete with
 * nothing. Options are the synopsis' [key=V], [word] and [--flag] words,
 * and the key= words its help lists (as "(tier= evict= ...)").
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/poolctl.h"

#define COMPLETION_WORDS 32

/* What the argument word w (its brackets and dots stripped) of command e completes with. */
static const char *completion_kind(const struct cmd_entry *e, const char *w)
{
	static const char *const makers[] = {"create", "put", "save"};
	const char *second = strchr(e->name, ' ');
	size_t i;

	if (strcmp(w, "FILE") == 0 || strcmp(w, "SOCKET") == 0)
		return "file";
	if (strcmp(w, "NODE") == 0)
		return "node";
	for (i = 0; second != NULL && i < ARRAY_SIZE(makers); i++)
		if (strcmp(second + 1, makers[i]) == 0)
			return "-";
	if (strcmp(w, "NS") == 0)
		return "ns";
	if (strcmp(w, "NAME") == 0) {
		if (strncmp(e->name, "snap ", 5) == 0)
			return "snap";
		if (strncmp(e->name, "region", 6) == 0)
			return "region";
		if (strncmp(e->name, "vec ", 4) == 0)
			return "vec";
	}
	return "-";
}

/* Whether a synopsis word (brackets stripped) is an option rather than an argument. */
static bool completion_is_option(const char *w)
{
	return w[0] == '-' || strchr(w, '=') != NULL || islower((unsigned char)w[0]);
}

/* The key= words of a help text's list, "(tier= evict= replicas=N)". */
static void completion_help_keys(const char *help, FILE *f)
{
	const char *p;

	for (p = strchr(help, '='); p != NULL; p = strchr(p + 1, '=')) {
		const char *b = p;

		while (b > help && (islower((unsigned char)b[-1]) || b[-1] == '_'))
			b--;
		if (b < p)
			fprintf(f, " %.*s=", (int)(p - b), b);
	}
}

/* The table line of e: "WORDS|KIND...|OPTION...". */
static void completion_line(const struct cmd_entry *e, FILE *f)
{
	char args[256], *save, *t;
	char kinds[COMPLETION_WORDS][16], opts[COMPLETION_WORDS][48];
	size_t nk = 0, no = 0, i;

	snprintf(args, sizeof(args), "%s", e->args);
	for (t = strtok_r(args, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save)) {
		char w[48];
		size_t len;

		while (*t == '[')
			t++;
		snprintf(w, sizeof(w), "%s", t);
		len = strcspn(w, "].");
		w[len] = '\0';
		if (len == 0 || strcmp(w, "...") == 0 || strcmp(w, "OPT") == 0 ||
		    strcmp(w, "opts") == 0)
			continue;
		if (completion_is_option(w)) {
			char *eq = strchr(w, '=');

			if (eq != NULL)
				eq[1] = '\0';
			if (no < COMPLETION_WORDS)
				snprintf(opts[no++], sizeof(opts[0]), "%s", w);
		} else if (!(no > 0 && opts[no - 1][0] == '-') && nk < COMPLETION_WORDS) {
			/* (an upper-case word right after a --flag is its value) */
			snprintf(kinds[nk++], sizeof(kinds[0]), "%s", completion_kind(e, w));
		}
	}
	fprintf(f, "\t'%s|", e->name);
	for (i = 0; i < nk; i++)
		fprintf(f, "%s%s", i ? " " : "", kinds[i]);
	fprintf(f, "|");
	for (i = 0; i < no; i++)
		fprintf(f, "%s%s", i ? " " : "", opts[i]);
	if (strchr(e->help, '(') != NULL)
		completion_help_keys(strchr(e->help, '('), f);
	fprintf(f, "'\n");
}

static const char completion_body[] =
    "# _poolctl_names SOCKET LISTING...: the first column of a poolctl listing, its header left\n"
    "_poolctl_names() {\n"
    "\tlocal sock=$1; shift\n"
    "\tpoolctl ${sock:+-s \"$sock\"} \"$@\" 2>/dev/null | awk 'NR > 1 { print $1 }'\n"
    "}\n"
    "\n"
    "_poolctl() {\n"
    "\tlocal cur=${COMP_WORDS[COMP_CWORD]} sock= e name args opts i k\n"
    "\tlocal -a w=() nw kinds next=()\n"
    "\tlocal -A seen=()\n"
    "\tCOMPREPLY=()\n"
    "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
    "\t\tcase ${COMP_WORDS[i]} in\n"
    "\t\t-s | --socket) ((i + 1 < COMP_CWORD)) && sock=${COMP_WORDS[i + 1]}; ((i++)) ;;\n"
    "\t\t-*) [[ -z ${w[*]} ]] || w+=(\"${COMP_WORDS[i]}\") ;;\n"
    "\t\t*) w+=(\"${COMP_WORDS[i]}\") ;;\n"
    "\t\tesac\n"
    "\tdone\n"
    "\tcase ${COMP_WORDS[COMP_CWORD - 1]} in\n"
    "\t-s | --socket) [[ -z ${w[*]} ]] && { COMPREPLY=($(compgen -f -- \"$cur\")); return; } ;;\n"
    "\tesac\n"
    "\tif [[ -z ${w[*]} && $cur == -* ]]; then\n"
    "\t\tCOMPREPLY=($(compgen -W \"-s --socket --json -h --help\" -- \"$cur\"))\n"
    "\t\treturn\n"
    "\tfi\n"
    "\tfor e in \"${_poolctl_table[@]}\"; do\n"
    "\t\tIFS='|' read -r name args opts <<<\"$e\"\n"
    "\t\tread -ra nw <<<\"$name\"\n"
    "\t\tif ((${#w[@]} < ${#nw[@]})); then\n"
    "\t\t\tif [[ \"${nw[*]:0:${#w[@]}}\" == \"${w[*]}\" && -z ${seen[${nw[${#w[@]}]}]:-} ]]; then\n"
    "\t\t\t\tseen[${nw[${#w[@]}]}]=1\n"
    "\t\t\t\tnext+=(\"${nw[${#w[@]}]}\")\n"
    "\t\t\tfi\n"
    "\t\t\tcontinue\n"
    "\t\tfi\n"
    "\t\t[[ \"${w[*]:0:${#nw[@]}}\" == \"$name\" ]] || continue\n"
    "\t\tread -ra kinds <<<\"$args\"\n"
    "\t\tk=$((${#w[@]} - ${#nw[@]}))\n"
    "\t\tcase ${kinds[k]:-opt} in\n"
    "\t\tfile) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
    "\t\tnode) COMPREPLY=($(compgen -W \"$(_poolctl_names \"$sock\" nodes)\" -- \"$cur\")) ;;\n"
    "\t\tns) COMPREPLY=($(compgen -W \"$(_poolctl_names \"$sock\" kv ls)\" -- \"$cur\")) ;;\n"
    "\t\tsnap) COMPREPLY=($(compgen -W \"$(_poolctl_names \"$sock\" snap ls)\" -- \"$cur\")) ;;\n"
    "\t\tregion) COMPREPLY=($(compgen -W \"$(_poolctl_names \"$sock\" regions)\" -- \"$cur\")) ;;\n"
    "\t\tvec) COMPREPLY=($(compgen -W \"$(_poolctl_names \"$sock\" vec ls)\" -- \"$cur\")) ;;\n"
    "\t\topt) COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\")) ;;\n"
    "\t\tesac\n"
    "\tdone\n"
    "\t# (\"fabric\" is a command, and the first word of \"fabric probe\")\n"
    "\tCOMPREPLY+=($(compgen -W \"${next[*]}\" -- \"$cur\"))\n"
    "\t# (key= words: no space after them)\n"
    "\t[[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null\n"
    "\treturn 0\n"
    "}\n"
    "complete -F _poolctl poolctl\n";

static int cmd_completion_exec(struct cmd_ctx *ctx)
{
	size_t n, i;
	const struct cmd_entry *const *table = cmd_entries(&n);

	(void)ctx;
	printf("# bash completion for poolctl(8), written by `poolctl completion bash` from\n"
	       "# its command table: a line per command, \"WORDS|ARGUMENTS|OPTIONS\", an\n"
	       "# argument completing as a file, node, ns, snap, region, vec or nothing (-).\n"
	       "_poolctl_table=(\n");
	for (i = 0; i < n; i++)
		completion_line(table[i], stdout);
	printf(")\n\n%s", completion_body);
	return EXIT_OK;
}

const struct cmd_entry cmd_completion_entry = {
    "completion bash",
    "",
    0,
    0,
    DAEMON_NONE,
    cmd_completion_exec,
    "write poolctl's bash completion script (from this command table)",
};
