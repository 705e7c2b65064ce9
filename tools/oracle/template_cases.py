"""Inputs for the chat template references (render_reference.py renders them with Jinja2).

FEATURE_CASES: small templates, one Jinja feature each, as (name, template, context).
ERROR_CASES: templates Jinja2 refuses, as (name, template, context, substring of the error message).
MODEL_CASES: conversations for the real Qwen3 and DeepSeek-V3 templates, as (name, models, request).
DIR_CASES: small model directories ({file name: content}) for how templates and special tokens are loaded,
as (name, files, request).
"""

D = {"a": 1, "b": "two", "items": [1, 2], "nested": {"x": {"y": "deep"}}}
L = [3, 1, 2]
USERS = [
    {"name": "ann", "age": 31, "role": "user", "active": True, "tags": ["x"]},
    {"name": "Bob", "age": 25, "role": "admin", "active": False, "tags": []},
    {"name": "cy", "age": 31, "role": "user", "active": True, "tags": ["y", "z"]},
]
CTX = {"d": D, "l": L, "s": "Hello World", "users": USERS, "n": 7, "f": 2.5, "t": True, "none": None, "e": ""}

FEATURE_CASES = [
    # ---- text, whitespace control, trim_blocks / lstrip_blocks ----
    ("text_only", "plain text\nline two\n", {}),
    ("trailing_newline_kept_once", "a\n\n", {}),
    ("crlf_normalized", "a\r\nb\rc\r\n", {}),
    ("trim_blocks_newline", "{% if true %}\nyes\n{% endif %}\nafter", {}),
    ("lstrip_blocks_indent", "x\n    {% if true %}\n    y\n    {% endif %}\nz", {}),
    ("lstrip_not_for_variables", "  {{ 'v' }}\n  {% if true %}k{% endif %}", {}),
    ("lstrip_mid_line_untouched", "a  {% if true %}b{% endif %}  c", {}),
    ("tabs_and_spaces_stripped", "\t \t{% if true %}\tx\n\t{% endif %}\n", {}),
    ("minus_strips_all", "a  \n\n  {%- if true -%}  \n\n  b  \n  {%- endif -%}\n\n  c", {}),
    ("minus_on_variables", "a   {{- 'b' -}}   c\n{{- ' d ' }}|", {}),
    ("plus_disables_lstrip", "x\n    {%+ if true %}y{% endif %}", {}),
    ("plus_disables_trim", "{% if true +%}\nkeep\n{% endif +%}\nend", {}),
    ("comments", "a{# comment #}b\n{# line comment #}\nc  {#- strip -#}  d\n   {# indented #}\ne", {}),
    ("comment_multiline", "a\n{#\n multi\n line\n#}\nb", {}),
    ("raw_block", "{% raw %}{{ not rendered }} {% if %}{% endraw %}|", {}),
    ("raw_block_whitespace", "x\n  {% raw %}\n  {{ a }}\n  {% endraw %}\ny", {}),
    ("raw_block_minus", "a  {%- raw -%}  b  {%- endraw -%}  c", {}),
    ("variable_then_newline", "{{ 'a' }}\n{{ 'b' }}\n", {}),
    ("block_at_start_of_template", "   {% if true %}x{% endif %}", {}),
    ("nested_indent_blocks", "{% for i in [1,2] %}\n  {% if i > 1 %}\n    big {{ i }}\n  {% else %}\n    small {{ i }}\n  {% endif %}\n{% endfor %}\n", {}),
    ("unicode_whitespace_minus", "a\u3000\u00a0{{- 'b' }}", {}),
    # ---- printing values like Python ----
    ("print_scalars", "{{ none }}|{{ true }}|{{ false }}|{{ 0 }}|{{ -12 }}|{{ 1.0 }}|{{ 2.5 }}|{{ 1e20 }}|{{ 1.5e-7 }}|{{ 0.1 + 0.2 }}|{{ 1e16 }}|{{ 123456789012345.6 }}|{{ 0.0001 }}|{{ 1e-5 }}", {}),
    ("print_containers", "{{ [1, 'a', none, true, 1.0] }}|{{ (1,) }}|{{ (1, 2) }}|{{ () }}|{{ {'k': [1, {'z': none}]} }}|{{ d }}", CTX),
    ("print_string_repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'back\\\\slash', 'nl\\n tab\\t', '\\x01\\x7f', 'caf\u00e9 \u4e2d \U0001F600', '\\u200b'] }}", {}),
    ("print_undefined", "[{{ missing }}][{{ d.missing }}][{{ l[10] }}]", CTX),
    ("print_dict_views", "{{ d.keys() }}|{{ d.values()|list }}|{{ d.items()|list }}", CTX),
    ("print_floats_from_context", "{{ x }}|{{ y }}|{{ z }}|{{ w }}", {"x": 3.0, "y": 0.000123, "z": 1e100, "w": -2.75}),
    # ---- literals and operators ----
    ("string_escapes", "{{ 'a\\nb\\tc\\\\d\\'e\\\"f\\x41\\u00e9\\U0001F600\\101\\q' }}", {}),
    ("string_concat_adjacent", "{{ 'a' 'b' \"c\" }}", {}),
    ("integer_literals", "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 1_0.2_5 }}", {}),
    ("arithmetic_int_float", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }} {{ 4 / 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.0 // 2 }} {{ -7.5 // 2 }} {{ -5.5 % 2 }} {{ 3 * 1.5 }} {{ 1 + true }} {{ 10 - 2.5 }}", {}),
    ("unary_minus_binds_filter", "{{ -3|abs }} {{ -2 ** 2 }} {{ +n }} {{ -f }}", CTX),
    ("string_and_list_ops", "{{ 'ab' * 3 }}|{{ 3 * 'x' }}|{{ [1] * 2 }}|{{ 'a' * -1 }}|{{ [1, 2] + [3] }}|{{ (1,) + (2,) }}|{{ 'a' + 'b' }}", {}),
    ("tilde_concat", "{{ 1 ~ none ~ true ~ 'x' ~ missing ~ [1] ~ 2.0 }}", {}),
    ("comparisons", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ none == none }} {{ 'a' == 1 }} {{ true == 1 }}", {}),
    ("in_not_in", "{{ 'ell' in s }} {{ 2 in l }} {{ 'a' in d }} {{ 'zz' not in d }} {{ 5 not in l }} {{ 'x' in missing }}", CTX),
    ("logic_returns_operands", "{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ none or none }}|{{ not 0 }}|{{ not l }}|{{ e or 'empty' }}", CTX),
    ("conditional_expression", "{{ 'y' if t else 'n' }}|{{ 'y' if e else 'n' }}|{{ 'a' if false }}|{{ 1 if none else 2 if true else 3 }}", CTX),
    ("precedence_mix", "{{ 1 + 2 * 3 ** 2 }} {{ (1 + 2) * 3 }} {{ not 1 == 2 }} {{ 2 * 3 ~ 4 }} {{ 1 + 1 is even }} {{ not true and false }} {{ 10 - 2 - 3 }} {{ 2 ** 3 ** 2 }}", {}),
    ("slicing", "{{ s[1:4] }}|{{ s[::-1] }}|{{ s[-5:] }}|{{ s[::2] }}|{{ l[1:] }}|{{ l[:-1] }}|{{ l[::-1] }}|{{ l[5:9] }}|{{ s[-100:3] }}|{{ (1, 2, 3)[1:] }}|{{ s[none:2] }}", CTX),
    ("negative_indexes", "{{ l[-1] }} {{ s[-1] }} {{ s[0] }} {{ l[0] }} {{ users[-1].name }}", CTX),
    ("unicode_indexing", "{{ u[1] }}|{{ u[-1] }}|{{ u[1:3] }}|{{ u|length }}|{{ u[::-1] }}|{{ u.find('\u4e2d') }}", {"u": "a\u00e9\u4e2d\U0001F600b"}),
    ("list_and_dict_literals", "{{ [1, [2, 3], {'a': (4, 5)}][2]['a'][1] }} {{ {'a': 1, 'a': 2} }} {{ [1, 2,][1] }} {{ {1: 'one', 'x': 2}[1] }}", {}),
    # ---- attribute and item lookup ----
    ("attr_vs_item", "{{ d.a }} {{ d['a'] }} {{ d.nested.x.y }} {{ d['nested']['x']['y'] }} {{ d.items|list if false else d['items'] }} {{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }}", CTX),
    ("dict_method_shadows_key", "{{ d['items'] }}|{{ d.items() | list }}|{{ (d.keys() | list)[1] }}", CTX),
    ("integer_attribute", "{{ l.0 }} {{ users.1.name }}", CTX),
    ("undefined_is_defined", "{{ missing is defined }} {{ missing is undefined }} {{ d.zz is defined }} {{ d.a is defined }} {{ users[0].name is defined }} {{ l[9] is defined }}", CTX),
    ("undefined_behaviour", "[{{ missing|length }}][{{ missing|list }}][{{ missing|default('dv') }}][{{ missing|string }}][{{ missing == missing }}][{{ missing|upper }}][{% for x in missing %}x{% else %}empty{% endfor %}][{{ missing is none }}]", {}),
    ("namespace_attribute_lookup", "{% set ns = namespace(a=1, b='x') %}{{ ns.a }}{{ ns['b'] }}{{ ns.c is defined }}{{ ns }}", {}),
    # ---- set, scoping ----
    ("set_basic", "{% set x = 1 %}{% set y = x + 1 %}{{ x }}{{ y }}{% set x = 'z' %}{{ x }}", {}),
    ("set_tuple_unpack", "{% set a, b = 1, 2 %}{% set c, (d2, e2) = [3, [4, 5]] %}{{ a }}{{ b }}{{ c }}{{ d2 }}{{ e2 }}", {}),
    ("set_block", "{% set block %}\n  hello {{ 'w' }}\n{% endset %}[{{ block }}]", {}),
    ("set_block_filtered", "{% set up | upper | trim %}  abc  {% endset %}[{{ up }}]", {}),
    ("set_in_if_leaks", "{% if true %}{% set y = 3 %}{% endif %}{{ y }}", {}),
    ("set_in_for_does_not_leak", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 10 %}{{ x }}|{% endfor %}{{ x }}", {}),
    ("for_iteration_scope_fresh", "{% for i in [1, 2] %}{% if i == 2 %}[{{ x }}]{% endif %}{% set x = i %}{% endfor %}", {}),
    ("loop_var_not_visible_after", "{% for i in [1] %}{% endfor %}[{{ i }}]", {}),
    ("context_overridden_by_set", "{{ n }}{% set n = 1 %}{{ n }}", CTX),
    ("namespace_counter", "{% set ns = namespace(count=0, names=[]) %}{% for u in users %}{% if u.active %}{% set ns.count = ns.count + 1 %}{% set ns.names = ns.names + [u.name] %}{% endif %}{% endfor %}{{ ns.count }} {{ ns.names }}", CTX),
    ("namespace_from_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}", {}),
    ("with_block", "{% with a = 1, b = 'x' %}{{ a }}{{ b }}{% set c = 3 %}{% endwith %}[{{ a }}{{ c }}]", {}),
    # ---- if / elif / else ----
    ("if_elif_else", "{% for v in [0, 1, 2, 3] %}{% if v == 0 %}zero{% elif v == 1 %}one{% elif v is even %}even{% else %}other{% endif %},{% endfor %}", {}),
    ("if_truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, none, 0.0] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    # ---- for loops ----
    ("for_loop_variables", "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}[{{ loop.previtem }}|{{ loop.nextitem }}]{{ loop.cycle('o', 'e') }}{{ loop.depth }}{{ loop.depth0 }} {% endfor %}", {}),
    ("for_else", "{% for x in [] %}x{% else %}none{% endfor %}|{% for x in [1] %}{{ x }}{% else %}none{% endfor %}", {}),
    ("for_filter", "{% for u in users if u.active %}{{ loop.index }}/{{ loop.length }}:{{ u.name }} {% endfor %}", CTX),
    ("for_filter_empty_else", "{% for x in l if x > 10 %}{{ x }}{% else %}nothing{% endfor %}", CTX),
    ("for_dict_and_items", "{% for k in d %}{{ k }},{% endfor %}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k, v in d|dictsort %}{{ k }}{% endfor %}", CTX),
    ("for_string", "{% for c in 'h\u00e9\U0001F600' %}[{{ c }}]{% endfor %}", {}),
    ("for_unpack_nested", "{% for a, (b, c) in [(1, (2, 3)), (4, (5, 6))] %}{{ a }}{{ b }}{{ c }} {% endfor %}", {}),
    ("for_break_continue", "{% for i in range(10) %}{% if i is odd %}{% continue %}{% endif %}{% if i > 6 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("nested_loops_loop_shadow", "{% for a in [1, 2] %}{% set outer = loop %}{% for b in 'xy' %}{{ outer.index }}{{ loop.index }}{{ b }} {% endfor %}{% endfor %}", {}),
    ("loop_changed", "{% for x in [1, 1, 2, 2, 1] %}{{ loop.changed(x) }},{% endfor %}", {}),
    ("recursive_loop", "{% for item in tree recursive %}<{{ item.name }}{% if item.children %}[{{ loop(item.children) }}]{% endif %}:{{ loop.depth }}>{% endfor %}", {"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]}),
    ("range_forms", "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }}", {}),
    ("messages_reverse_iteration", "{% for m in msgs[::-1] %}{{ loop.index0 }}:{{ m }} {% endfor %}", {"msgs": ["a", "b", "c"]}),
    # ---- macros and call ----
    ("macro_defaults", "{% macro greet(name, punct='!', times=1) %}{{ ('Hi ' ~ name ~ punct) * times }}{% endmacro %}{{ greet('A') }}|{{ greet('B', '?') }}|{{ greet('C', times=2) }}|{{ greet(name='D') }}", {}),
    ("macro_default_uses_earlier_arg", "{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(3) }}|{{ m(3, 1) }}", {}),
    ("macro_missing_arg_undefined", "{% macro m(a, b) %}[{{ a }}][{{ b }}][{{ b is defined }}]{% endmacro %}{{ m(1) }}", {}),
    ("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}", {}),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(6) }}", {}),
    ("macro_sees_outer_at_call_time", "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}", {}),
    ("macro_whitespace", "{% macro render(m) %}\n  <{{ m }}>\n{% endmacro %}\n{{ render('a') }}{{ render('b') }}", {}),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ 1 + 1 }}{% endcall %}", {}),
    ("call_block_with_args", "{% macro each(xs) %}{% for x in xs %}{{ caller(x, loop.index) }}{% endfor %}{% endmacro %}{% call(item, i) each(['p', 'q']) %}{{ i }}={{ item }};{% endcall %}", {}),
    ("filter_block", "{% filter upper %}shout {{ 'this' }}{% endfilter %}|{% filter replace('a', 'o') | trim %}  banana  {% endfilter %}", {}),
    ("generation_tag", "{% for m in ['a', 'b'] %}{% generation %}<{{ m }}>{% endgeneration %}{% endfor %}", {}),
    ("print_statement", "{% print 'p', 1 + 1 %}", {}),
    # ---- tests ----
    ("tests_types", "{% for v in [none, true, 1, 1.5, 'a', [1], {'k': 1}] %}{{ v is none }}{{ v is boolean }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is string }}{{ v is sequence }}{{ v is mapping }}{{ v is iterable }}{{ v is true }}{{ v is false }} {% endfor %}", {}),
    ("tests_numbers", "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 3 is lt 4 }}{{ 3 is gt 4 }}{{ 3 is le 3 }}{{ 3 is ge 4 }}{{ 3 is ne 4 }}{{ 3 is eq 3 }}{{ 3 is equalto 3 }}", {}),
    ("tests_misc", "{{ 2 is in [1, 2] }}{{ 'x' is in 'xyz' }}{{ none is sameas none }}{{ true is sameas true }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ range is callable }}{{ 'upper' is filter }}{{ 'odd' is test }}{{ 'nope' is filter }}", {}),
    ("test_negated", "{{ 1 is not string }}{{ missing is not defined }}{{ none is not none }}{{ not none is none }}", {}),
    ("test_in_if_and_filter_args", "{% if users|selectattr('role', 'equalto', 'admin')|list|length == 1 %}one admin{% endif %}", CTX),
    # ---- filters ----
    ("filter_tojson_default", "{{ v|tojson }}", {"v": {"s": "caf\u00e9 \"q\" \\ </tag> & \u2028", "n": [1, 2.5, None, True], "e": {}, "l": []}}),
    ("filter_tojson_args", "{{ v|tojson(indent=2) }}\n{{ v|tojson(indent='\\t', sort_keys=true) }}\n{{ v|tojson(separators=(',', ':')) }}\n{{ v|tojson(ensure_ascii=true) }}\n{{ v|tojson(indent=0) }}", {"v": {"z": [1, {"y": "\u00e9\U0001F600"}], "a": {}, "m": []}}),
    ("filter_tojson_scalars", "{{ 'x'|tojson }} {{ 1|tojson }} {{ 1.0|tojson }} {{ none|tojson }} {{ true|tojson }} {{ (1, 2)|tojson }} {{ 1e20|tojson }}", {}),
    ("filter_string_case", "{{ s|upper }} {{ s|lower }} {{ 'hello wORLD'|capitalize }} {{ 'hello-world (x) [y] they\\'re'|title }} {{ 'they\\'re bill\\'s'.title() }} {{ '\u00df'|upper }}", CTX),
    ("filter_trim_replace", "[{{ '  x  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ 'aaa'|replace('a', 'b', 2) }}][{{ 'abc'|replace('', '-') }}][{{ 123|replace('2', 'x') }}]", {}),
    ("filter_length_count", "{{ l|length }} {{ s|length }} {{ d|length }} {{ l|count }} {{ ''|length }} {{ 'h\u00e9\U0001F600'|length }}", CTX),
    ("filter_first_last", "{{ l|first }} {{ l|last }} {{ s|first }} {{ s|last }} {{ d|first }} {{ d|last }} [{{ []|first }}]", CTX),
    ("filter_join", "{{ l|join }}|{{ l|join(', ') }}|{{ users|join(', ', attribute='name') }}|{{ [1, none, 'a']|join('-') }}", CTX),
    ("filter_default", "{{ missing|default('x') }}|{{ missing|d('y') }}|{{ none|default('z') }}|{{ none|default('z', true) }}|{{ ''|default('w', boolean=true) }}|{{ 0|default(5) }}|{{ missing|default }}", {}),
    ("filter_list_items", "{{ 'ab'|list }} {{ d|list }} {{ d|items|list }} {{ (1, 2)|list }}", CTX),
    ("filter_selectattr_rejectattr", "{{ users|selectattr('active')|map(attribute='name')|list }} {{ users|rejectattr('active')|map(attribute='name')|list }} {{ users|selectattr('age', 'equalto', 31)|map(attribute='name')|join(',') }} {{ users|selectattr('role', 'ne', 'user')|list|length }} {{ users|selectattr('tags')|list|length }}", CTX),
    ("filter_select_reject", "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('odd')|list }} {{ [0, 1, '', 'a']|select|list }} {{ [1, 5, 10]|select('gt', 4)|list }} {{ ['a', 1]|select('string')|list }}", {}),
    ("filter_map", "{{ users|map(attribute='name')|list }} {{ ['a', 'b']|map('upper')|list }} {{ users|map(attribute='missing', default='?')|list }} {{ [[1, 2], [3]]|map('length')|list }} {{ ['x']|map('replace', 'x', 'y')|list }} {{ d|map('upper')|list }}", CTX),
    ("filter_map_dotted", "{{ rows|map(attribute='p.q')|list }} {{ rows|map(attribute='r.0')|list }}", {"rows": [{"p": {"q": 1}, "r": ["a"]}, {"p": {"q": 2}, "r": ["b"]}]}),
    ("generator_truthiness", "{% if []|select %}always-true{% endif %}|{% if []|select|list %}never{% endif %}|{% set g = l|select %}{{ g|list }}{{ g|list }}", CTX),
    ("filter_numbers", "{{ -3|abs }} {{ -2.5|abs }} {{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(9) }} {{ '0x1A'|int(0, 16) }} {{ '0b11'|int(0, 0) }} {{ 3.99|int }} {{ true|int }} {{ ' 12 '|int }} {{ '1_000'|int }} {{ '3'|float }} {{ 'x'|float }} {{ '1e3'|float }} {{ 2|float }} {{ ' -inf '|float }}", {}),
    ("filter_round", "{{ 2.5|round }} {{ 3.5|round }} {{ -2.5|round }} {{ 3|round }} {{ 3.14159|round(2) }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(0, 'floor') }} {{ 1.25|round(1, 'ceil') }} {{ 1234.5|round(-2) }}", {}),
    ("filter_sort", "{{ l|sort }} {{ l|sort(reverse=true) }} {{ ['b', 'A', 'a', 'C']|sort }} {{ ['b', 'A', 'a', 'C']|sort(case_sensitive=true) }} {{ users|sort(attribute='age')|map(attribute='name')|list }} {{ users|sort(attribute='age,name')|map(attribute='name')|list }} {{ users|sort(attribute='name', reverse=true)|map(attribute='name')|join }}", CTX),
    ("filter_dictsort", "{{ {'b': 1, 'A': 3, 'c': 2}|dictsort }} {{ {'b': 1, 'A': 3, 'c': 2}|dictsort(true) }} {{ {'b': 1, 'a': 3, 'c': 2}|dictsort(by='value') }} {{ {'b': 1, 'a': 3}|dictsort(reverse=true) }}", {}),
    ("filter_unique_min_max_sum", "{{ ['a', 'A', 'b', 'a']|unique|list }} {{ ['a', 'A', 'b']|unique(case_sensitive=true)|list }} {{ users|unique(attribute='age')|map(attribute='name')|list }} {{ l|min }} {{ l|max }} {{ ['b', 'A', 'c']|max }} {{ users|max(attribute='age')|attr('name') if false else (users|max(attribute='age')).name }} {{ l|sum }} {{ [0.5, 1]|sum }} {{ users|sum(attribute='age') }} {{ l|sum(start=10) }} [{{ []|max }}]", CTX),
    ("filter_reverse", "{{ s|reverse }} {{ l|reverse|list }} {{ (1, 2)|reverse|list }} {{ l|select|reverse|list }}", CTX),
    ("filter_batch_slice", "{{ range(7)|batch(3)|list }} {{ range(7)|batch(3, 'x')|list }} {{ range(7)|slice(3)|list }} {{ range(7)|slice(3, 0)|list }}", {}),
    ("filter_indent", "[{{ 'a\\nb\\n\\nc'|indent }}][{{ 'a\\nb'|indent(2, true) }}][{{ 'a\\n\\nb'|indent(width='> ', blank=true) }}][{{ 'x\\r\\ny'|indent(1) }}][{{ ''|indent }}]", {}),
    ("filter_center_wordcount_truncate", "[{{ 'ab'|center(7) }}][{{ 'abc'|center(6) }}][{{ 'one two  three-four'|wordcount }}][{{ 'hello world foo bar'|truncate(11) }}][{{ 'hello world foo bar'|truncate(11, true) }}][{{ 'hello world foo bar'|truncate(11, false, '!', 0) }}]", {}),
    ("filter_string_format", "{{ 1|string }}{{ none|string }}{{ [1]|string }}|{{ '%s-%d'|format('a', 3) }}|{{ '%(x)s'|format(x='kw') }}|{{ '%05.1f|%x|%r|%5s|%-4s|%%'|format(3.14159, 255, 'q', 'r', 'l') }}", {}),
    ("filter_escape_safe", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|safe }} {{ '<i>'|escape }}", {}),
    ("filter_attr", "{{ d|attr('a') }}|{{ d|attr('keys') is defined }}|{{ ns|attr('v') }}", {"d": D, "ns": None}),
    ("filter_groupby", "{% for g in users|groupby('age') %}{{ g[0] }}:{{ g[1]|map(attribute='name')|join(',') }};{% endfor %}|{% for key, items in users|groupby('role') %}{{ key }}={{ items|length }};{% endfor %}", CTX),
    ("filter_chains_on_block_set", "{% set x %}  A b C  {% endset %}{{ x|trim|lower|replace(' ', '_') }}", {}),
    # ---- methods of str, dict, list ----
    ("str_methods_strip_split", "[{{ '  a b  '.strip() }}][{{ 'xxaxx'.lstrip('x') }}][{{ 'xxaxx'.rstrip('x') }}][{{ ' a  b '.split() }}][{{ 'a,b,,c'.split(',') }}][{{ 'a,b,c'.split(',', 1) }}][{{ 'a b c'.rsplit(' ', 1) }}][{{ '\\n\\tx\\u3000'.strip() }}][{{ 'l1\\nl2\\r\\nl3\\n'.splitlines() }}]", {}),
    ("str_methods_search", "{{ s.startswith('Hell') }}{{ s.endswith('x') }}{{ s.startswith(('x', 'H')) }}{{ s.find('o') }}{{ s.rfind('o') }}{{ s.find('zz') }}{{ s.count('l') }}{{ s.index('W') }}{{ s.find('o', 5) }}{{ s.startswith('World', 6) }}", CTX),
    ("str_methods_case", "{{ s.lower() }}|{{ s.upper() }}|{{ 'hELLO world'.capitalize() }}|{{ 'hello wORLD 2nd'.title() }}|{{ 'AbC'.swapcase() }}|{{ 'abc'.islower() }}{{ 'ABC'.isupper() }}{{ '123'.isdigit() }}{{ 'ab1'.isalnum() }}{{ 'ab'.isalpha() }}{{ '  '.isspace() }}{{ ''.isdigit() }}", CTX),
    ("str_methods_misc", "{{ 'a-b'.replace('-', '+') }}|{{ ', '.join(['x', 'y']) }}|{{ '{}-{}'.format(1, 'b') }}|{{ '{name}:{0}'.format(5, name='n') }}|{{ '{:>5}|{:<4}|{:^6}|{:.2f}|{:,}|{:05d}|{!r}'.format('r', 'l', 'c', 3.14159, 1234567, 42, 'q') }}|{{ 'ab'.center(6, '*') }}|{{ '5'.zfill(3) }}|{{ 'a=b=c'.partition('=') }}|{{ 'prefix_x'.removeprefix('prefix_') }}", {}),
    ("list_and_dict_methods", "{{ l.index(1) }} {{ [1, 1, 2].count(1) }} {{ d.keys()|list }} {{ d.values()|list|length }} {{ d.items()|list|first }} {{ d.copy() == d }}", CTX),
    ("content_split_think", "{% set c = m.split('</think>')[-1].lstrip('\\n') %}{% set r = m.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}[{{ r }}][{{ c }}]", {"m": "<think>\nplan\n</think>\n\nanswer"}),
    # ---- globals ----
    ("globals_dict_cycler_joiner", "{{ dict(a=1, b=2) }} {{ dict([('x', 1)]) }} {% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }} {% set j = joiner('|') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}", {}),
    ("strftime_now_shape", "{{ strftime_now('%Y')|length }} {{ strftime_now('%d %b')|length > 4 }} {{ strftime_now('%%') }}", {}),
    ("raise_exception_not_reached", "{% if false %}{{ raise_exception('never') }}{% endif %}ok", {}),
    ("unknown_filter_in_if_deferred", "{% if false %}{{ x|no_such_filter }}{% endif %}{{ 'ok' if true else x|no_such_filter }}", {}),
    ("generator_partially_consumed", "{% set g = l|select('odd') %}{{ g|first }}{{ g|list }}{{ 3 in l|select }}", CTX),
    ("tuple_dict_keys", "{{ {(1, 2): 'tup'}[(1, 2)] }} {{ (1, 2) in {(1, 2): 0} }}", {}),
    ("percent_with_list_or_dict_argument", "{{ 'no specifiers' % [1, 2] }}|{{ '%s' % [1, 2] }}|{{ 'x' % {'a': 1} }}", {}),
    ("truncate_sized_non_string", "{{ l|truncate(5) }}|{{ missing|truncate }}", CTX),
    ("caller_param_unused_is_fine", "{% macro m(caller) %}x{% endmacro %}{{ m(1) }}", {}),
    ("special_globals_defined", "{{ lipsum is defined }}{{ self is defined }}{{ range is defined }}{{ joiner is callable }}", {}),
    ("context_big_integer", "{{ big }} {{ big|tojson }} {{ [big] }} {{ big is integer }} {{ big == big }} {{ {'id': big}|tojson }}", {"big": 18446744073709551615}),
    ("context_value_types", "{{ i }} {{ i is integer }} {{ fl is float }} {{ fl }} {{ big }} {{ neg }} {{ b is boolean }} {{ nul is none }} {{ arr|tojson }} {{ obj|tojson }}", {"i": 5, "fl": 5.0, "big": 9007199254740993, "neg": -0.0, "b": False, "nul": None, "arr": [1, "2", [3]], "obj": {"k": {"n": 1.25}}}),
]

ERROR_CASES = [
    ("error_raise_exception", "{% if messages|length == 0 %}{{ raise_exception('No messages were provided!') }}{% endif %}", {"messages": []}, "No messages were provided!"),
    ("error_undefined_attribute_call", "{{ message.content.strip() }}", {"message": {"role": "user"}}, "'dict object' has no attribute 'content'"),
    ("error_undefined_variable_attribute", "{{ nothing.attr }}", {}, "'nothing' is undefined"),
    ("error_undefined_in_arithmetic", "{{ missing + 1 }}", {}, "'missing' is undefined"),
    ("error_undefined_element", "{{ items[3].name }}", {"items": [1]}, "list object has no element 3"),
    ("error_unsafe_list_append", "{% set xs = [] %}{{ xs.append(1) }}", {}, "access to attribute 'append' of 'list' object is unsafe."),
    ("error_unsafe_dict_update", "{% set m = {} %}{{ m.update({'a': 1}) }}", {}, "access to attribute 'update' of 'dict' object is unsafe."),
    ("error_str_plus_int", "{{ 'a' + 1 }}", {}, 'can only concatenate str (not "int") to str'),
    ("error_int_plus_str", "{{ 1 + 'a' }}", {}, "unsupported operand type(s) for +: 'int' and 'str'"),
    ("error_compare_mixed", "{{ 1 < 'a' }}", {}, "'<' not supported between instances of 'int' and 'str'"),
    ("error_division_by_zero", "{{ 1 / 0 }}", {}, "division by zero"),
    ("error_length_of_generator", "{{ [1, 2]|select('odd')|length }}", {}, "object of type 'generator' has no len()"),
    ("error_iterate_none", "{% for x in none %}{% endfor %}", {}, "'NoneType' object is not iterable"),
    ("error_unpack_count", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}, "too many values to unpack (expected 2)"),
    ("error_unknown_filter", "{{ 1|no_such_filter }}", {}, "No filter named 'no_such_filter'"),
    ("error_unknown_filter_runtime", "{% if true %}{{ 1|no_such_filter }}{% endif %}", {}, "No filter named 'no_such_filter' found."),
    ("error_unknown_test", "{{ 1 is no_such_test }}", {}, "No test named 'no_such_test'"),
    ("error_unknown_tag", "{% do x %}", {}, "Encountered unknown tag 'do'."),
    ("error_unclosed_block", "{% if true %}x", {}, "Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or 'endif'. The innermost block that needs to be closed is 'if'."),
    ("error_nesting_mistake", "{% for x in l %}{% endif %}", {"l": []}, "Encountered unknown tag 'endif'. Jinja was looking for the following tags: 'endfor' or 'else'. The innermost block that needs to be closed is 'for'."),
    ("error_break_outside_loop", "{% break %}", {}, "'break' outside loop"),
    ("error_expression_expected", "{{ }}", {}, "Expected an expression, got 'end of print statement'"),
    ("error_unterminated_comment", "a {# b", {}, "Missing end of comment tag"),
    ("error_namespace_assignment", "{% set x = 1 %}{% set x.y = 2 %}", {}, "cannot assign attribute on non-namespace object"),
    ("error_range_too_big", "{{ range(100001)|length }}", {}, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."),
    ("error_macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", {}, "macro 'm' takes not more than 1 argument(s)"),
    ("error_macro_unknown_kwarg", "{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", {}, "macro 'm' takes no keyword argument 'b'"),
    ("error_tojson_undefined", "{{ missing|tojson }}", {}, "Object of type Undefined is not JSON serializable"),
    ("error_cond_expr_without_else", "{{ (1 if false).x }}", {}, "evaluated to false and no else section was defined"),
    ("error_call_non_callable", "{{ 'abc'() }}", {}, "'str' object is not callable"),
    ("error_last_of_generator", "{{ [1]|select|last }}", {}, "'generator' object is not reversible"),
    ("error_slice_of_int", "{{ n[1:] }}", {"n": 5}, "'int' object is not subscriptable"),
    ("error_slice_of_dict", "{{ d[1:] }}", {"d": {}}, "unhashable type: 'slice'"),
    ("error_truncate_long_list", "{{ l|truncate(5, leeway=0) }}", {"l": list(range(10))}, "object has no attribute 'rsplit'"),
    ("error_caller_without_default", "{% macro m(caller) %}{{ caller }}{% endmacro %}", {}, 'the special "caller" argument must be omitted or be given a default'),
    ("error_for_target_trailing_comma", "{% for a, in [[1]] %}{% endfor %}", {}, "expected token 'in', got '['"),
    ("error_tests_chained", "{{ 1 is odd is even }}", {}, "You cannot chain multiple tests with is"),
    ("error_raise_in_macro", "{% macro check(m) %}{% if m.role not in ['user', 'assistant'] %}{{ raise_exception('Unexpected role: ' ~ m.role) }}{% endif %}{% endmacro %}{% for m in ms %}{{ check(m) }}{% endfor %}", {"ms": [{"role": "user"}, {"role": "robot"}]}, "Unexpected role: robot"),
]

# ---- conversations for the real templates ----

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web — returns snippets (UTF-8: ünïcödé, 中文).",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "k": {"type": "number"}}, "required": ["query"]},
    },
}

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "What's the weather in Paris?"}


def call(name, arguments, id_="call_1"):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


BOTH = ("qwen3", "deepseek_v3")
QWEN = ("qwen3",)
DEEPSEEK = ("deepseek_v3",)

MODEL_CASES = [
    ("single_user_gen", BOTH, {"messages": [{"role": "user", "content": "Hi!"}], "add_generation_prompt": True}),
    ("single_user_no_gen", BOTH, {"messages": [{"role": "user", "content": "Hi!"}]}),
    ("system_user_gen", BOTH, {"messages": [SYSTEM, USER], "add_generation_prompt": True}),
    ("multi_turn", BOTH, {"messages": [SYSTEM, {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4."}, {"role": "user", "content": "And 3+3?"}], "add_generation_prompt": True}),
    ("multi_turn_ends_with_assistant", BOTH, {"messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi, how can I help?"}]}),
    ("two_system_messages", BOTH, {"messages": [SYSTEM, {"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Why is the sky blue?"}], "add_generation_prompt": True}),
    ("enable_thinking_false", QWEN, {"messages": [USER], "add_generation_prompt": True, "enable_thinking": False}),
    ("enable_thinking_true", QWEN, {"messages": [USER], "add_generation_prompt": True, "enable_thinking": True}),
    ("enable_thinking_false_no_gen", QWEN, {"messages": [USER], "add_generation_prompt": False, "enable_thinking": False}),
    ("reasoning_content_last_turn", QWEN, {"messages": [{"role": "user", "content": "Think then answer: 17*3?"}, {"role": "assistant", "content": "51", "reasoning_content": "17*3 = 51.\n"}]}),
    ("reasoning_content_history", QWEN, {"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1", "reasoning_content": "r1"}, {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2", "reasoning_content": "r2"}, {"role": "user", "content": "q3"}], "add_generation_prompt": True}),
    ("reasoning_content_none", QWEN, {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "reasoning_content": None}]}),
    ("inline_think_in_content", BOTH, {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>\nhidden plan\n</think>\n\nvisible answer"}]}),
    ("inline_think_after_last_query", QWEN, {"messages": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "<think>old</think>a1"}, {"role": "user", "content": "q2"}, {"role": "assistant", "content": "<think>\nnew\n</think>\n\na2"}]}),
    ("tools_no_system", BOTH, {"messages": [USER], "tools": [WEATHER_TOOL, SEARCH_TOOL], "add_generation_prompt": True}),
    ("tools_with_system", BOTH, {"messages": [SYSTEM, USER], "tools": [WEATHER_TOOL], "add_generation_prompt": True}),
    ("tool_call_dict_arguments", QWEN, {"messages": [SYSTEM, USER, {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris", "unit": "celsius", "days": 2, "verbose": True, "ratio": 0.5, "note": None})]}, {"role": "tool", "content": "{\"temp\": 21}"}], "tools": [WEATHER_TOOL], "add_generation_prompt": True}),
    ("tool_call_string_arguments", QWEN, {"messages": [SYSTEM, USER, {"role": "assistant", "content": "", "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}")]}, {"role": "tool", "content": "21 degrees"}], "tools": [WEATHER_TOOL], "add_generation_prompt": True}),
    ("tool_call_string_arguments_content_none", DEEPSEEK, {"messages": [SYSTEM, USER, {"role": "assistant", "content": None, "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}")]}, {"role": "tool", "content": "21 degrees"}], "tools": [WEATHER_TOOL], "add_generation_prompt": True}),
    ("tool_call_with_content", QWEN, {"messages": [USER, {"role": "assistant", "content": "Let me check.", "tool_calls": [call("get_weather", {"city": "Paris"})]}, {"role": "tool", "content": "sunny"}, {"role": "assistant", "content": "It is sunny in Paris."}], "tools": [WEATHER_TOOL]}),
] + [
    (f"parallel_tool_calls_and_responses{suffix}", models, {"messages": [SYSTEM, {"role": "user", "content": "Weather in Paris and Rome?"}, {"role": "assistant", "content": content, "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}", "c1"), call("get_weather", "{\"city\": \"Rome\"}", "c2"), call("search", "{\"query\": \"rome weather\"}", "c3")]}, {"role": "tool", "content": "Paris: 21C"}, {"role": "tool", "content": "Rome: 25C"}, {"role": "tool", "content": "Rome is warm"}, {"role": "assistant", "content": "Paris 21C, Rome 25C."}, {"role": "user", "content": "Thanks!"}], "tools": [WEATHER_TOOL, SEARCH_TOOL], "add_generation_prompt": True})
    for suffix, models, content in (("", QWEN, ""), ("_content_none", DEEPSEEK, None))
] + [
    (f"tool_response_last_gen{suffix}", models, {"messages": [USER, {"role": "assistant", "content": content, "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}")]}, {"role": "tool", "content": "rain"}], "add_generation_prompt": True})
    for suffix, models, content in (("", QWEN, ""), ("_content_none", DEEPSEEK, None))
] + [
    ("tool_call_without_function_wrapper", QWEN, {"messages": [USER, {"role": "assistant", "content": "", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}]}, {"role": "tool", "content": "snow"}]}),
    ("multi_step_tool_user_tool_response", QWEN, {"messages": [{"role": "user", "content": "start"}, {"role": "assistant", "content": "", "tool_calls": [call("search", {"query": "x"})]}, {"role": "user", "content": "<tool_response>\nresult\n</tool_response>"}, {"role": "assistant", "content": "<think>\nreason\n</think>\n\ndone"}]}),
    ("unicode_content", BOTH, {"messages": [{"role": "system", "content": "Réponds en français. 日本語も OK. ✓"}, {"role": "user", "content": "Emoji 😀👍🏽, RTL עברית, combining e\u0301, zero-width \u200b, math ∑∞, \"quotes\" and \\backslash\\"}, {"role": "assistant", "content": "D'accord — 好的!"}], "add_generation_prompt": True}),
    ("template_like_content", BOTH, {"messages": [{"role": "user", "content": "Render {{ this }} and {% that %} and {# not a comment #} literally."}], "add_generation_prompt": True}),
    ("whitespace_heavy_content", BOTH, {"messages": [{"role": "user", "content": "  leading and trailing spaces  \n\n\t tabs\r\n crlf \n"}, {"role": "assistant", "content": "\n\nok\n\n"}]}),
    ("empty_contents", BOTH, {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": ""}], "add_generation_prompt": True}),
    ("extra_kwargs_ignored", BOTH, {"messages": [USER], "add_generation_prompt": True, "custom_flag": True, "documents": None}),
    ("long_conversation", BOTH, {"messages": [SYSTEM] + [m for i in range(12) for m in ({"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"})], "add_generation_prompt": False}),
    ("continue_final_message", BOTH, {"messages": [SYSTEM, {"role": "user", "content": "Write a haiku."}, {"role": "assistant", "content": "Autumn moonlight—"}], "continue_final_message": True}),
    ("continue_final_message_trailing_space", BOTH, {"messages": [{"role": "user", "content": "Count:"}, {"role": "assistant", "content": "one, two, "}], "continue_final_message": True}),
    ("chat_template_inline_in_request", BOTH, {"messages": [{"role": "user", "content": "hi"}], "chat_template": "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{{ eos_token }}", "add_generation_prompt": True}),
    ("qwen3_tool_call_content_none_error", QWEN, {"messages": [USER, {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Paris"})]}]}),
    ("deepseek_tool_call_dict_arguments_error", DEEPSEEK, {"messages": [USER, {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Paris"})]}]}),
]

# Error substrings for model cases that Jinja2 refuses (the case name maps to the substring).
MODEL_ERRORS = {
    "continue_final_message_with_generation_prompt_error": "continue_final_message and add_generation_prompt are not compatible",
    "continue_final_message_dropped_by_template_error": "the final message does not appear in the chat after applying the chat template",
    "qwen3_tool_call_content_none_error": "argument of type 'NoneType' is not iterable",
    "deepseek_tool_call_dict_arguments_error": 'can only concatenate str (not "dict") to str',
    "empty_conversation_error": "Cannot apply chat template to an empty conversation",
}

# ---- model directories: where the template and the special tokens come from ----

SHOW_TOKENS = ("{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token is defined }}|{{ sep_token is defined }}|"
               "{{ image_token }}|{{ additional_special_tokens is defined }}|{{ add_generation_prompt }}|"
               "{{ tools }}|{{ documents }}|{{ messages|length }}")


def tokenizer_config(**entries):
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": None, "unk_token": None,
              "pad_token": None}
    config.update(entries)
    return config


ADDED = {"__type": "AddedToken", "content": "<bos>", "lstrip": False, "normalized": True, "rstrip": False, "single_word": False}

DIR_CASES = [
    ("special_tokens_strings_and_added_tokens", {"tokenizer_config.json": tokenizer_config(
        bos_token=ADDED, eos_token="</s>", pad_token={"__type": "AddedToken", "content": "<pad>", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False},
        image_token="<img>", add_bos_token=True, additional_special_tokens=["<x>"], chat_template=SHOW_TOKENS)},
     {"messages": [{"role": "user", "content": "hi"}]}),
    ("request_overrides_special_token", {"tokenizer_config.json": tokenizer_config(bos_token="<s>", chat_template=SHOW_TOKENS)},
     {"messages": [{"role": "user", "content": "hi"}], "bos_token": "[override]", "add_generation_prompt": True}),
    ("chat_template_jinja_file_wins", {"tokenizer_config.json": tokenizer_config(eos_token="</s>", chat_template="from config"),
                                       "chat_template.jinja": "from file {{ eos_token }}\n"},
     {"messages": [{"role": "user", "content": "hi"}]}),
    ("named_templates_default", {"tokenizer_config.json": tokenizer_config(chat_template=[
        {"name": "default", "template": "default {{ messages[0].content }}"},
        {"name": "tool_use", "template": "tool_use {{ tools|length }}"}])},
     {"messages": [{"role": "user", "content": "x"}]}),
    ("named_templates_tool_use", {"tokenizer_config.json": tokenizer_config(chat_template=[
        {"name": "default", "template": "default {{ messages[0].content }}"},
        {"name": "tool_use", "template": "tool_use {{ tools|length }}"}])},
     {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}]}),
    ("chat_template_named_in_request", {"tokenizer_config.json": tokenizer_config(chat_template=[
        {"name": "default", "template": "default"}, {"name": "rag", "template": "rag {{ documents|length }}"}])},
     {"messages": [{"role": "user", "content": "hi"}], "chat_template": "rag", "documents": [{"title": "t", "text": "x"}]}),
    ("continue_final_message_content_blocks", {"tokenizer_config.json": tokenizer_config(chat_template=(
        "{% for m in messages %}<{{ m.role }}>{% for b in m.content %}{% if b.text is defined %}{{ b.text }}{% else %}[img]{% endif %}{% endfor %}</{{ m.role }}>{% endfor %}"))},
     {"messages": [{"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image"}]},
                   {"role": "assistant", "content": [{"type": "text", "text": "I see a "}, {"type": "image"}]}], "continue_final_message": True}),
    ("continue_final_message_trimmed_by_template", {"tokenizer_config.json": tokenizer_config(chat_template=(
        "{% for m in messages %}<{{ m.role }}>{{ m.content|trim }}</{{ m.role }}>\n{% endfor %}"))},
     {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "partial answer  "}], "continue_final_message": True}),
    ("continue_final_message_custom_field", {"tokenizer_config.json": tokenizer_config(chat_template=(
        "{% for m in messages %}{{ m.role }}: {% if m.thinking %}<think>{{ m.thinking }}</think>{% endif %}{{ m.content }}\n{% endfor %}"))},
     {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "thinking": "let me see"}], "continue_final_message": "thinking"}),
    ("continue_final_message_with_generation_prompt_error", {"tokenizer_config.json": tokenizer_config(chat_template="{{ messages[0].content }}")},
     {"messages": [{"role": "user", "content": "q"}], "continue_final_message": True, "add_generation_prompt": True}),
    ("continue_final_message_dropped_by_template_error", {"tokenizer_config.json": tokenizer_config(chat_template="{% for m in messages %}{{ m.role }}{% endfor %}{# content #}")},
     {"messages": [{"role": "user", "content": "q"}], "continue_final_message": True}),
    ("additional_chat_templates_dir", {"tokenizer_config.json": tokenizer_config(eos_token="</s>"),
                                       "chat_template.jinja": "plain {{ eos_token }}",
                                       "additional_chat_templates/tool_use.jinja": "tools: {{ tools|map(attribute='function.name')|join(',') }}"},
     {"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "g"}}]}),
    # apply_chat_template refuses an empty conversation before the template runs, even one that would render.
    ("empty_conversation_error", {"tokenizer_config.json": tokenizer_config(chat_template="{{ messages|length }}")},
     {"messages": [], "add_generation_prompt": True}),
]
