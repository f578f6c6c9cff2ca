"""The rule-based distillation (commands.distill): sentences, the seed's hard rules, the extractor."""

from __future__ import annotations

import pytest

from commands.distill.engine import asks_to_remember, distill_by_rules
from commands.distill.hard_rules import information_density
from commands.distill.sentences import split_sentences


def _chat(*lines: str) -> list[dict]:
    """Alternating user / assistant turns."""
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": line} for i, line in enumerate(lines)]


def test_sentences_keep_versions_paths_and_abbreviations_whole():
    assert split_sentences("Python 3.11 is in /opt/py3.11/bin. The key is at no. 17 ok! 好的。端口 8189") == [
        "Python 3.11 is in /opt/py3.11/bin.", "The key is at no. 17 ok!", "好的。", "端口 8189"]


def test_density_counts_content_words_in_both_scripts():
    assert information_density(["haha ok thanks lol"]) == 0.0
    assert information_density(["ComfyUI listens on 8189"]) == 0.75        # "on" is a stop word
    assert 0.3 < information_density(["我的显卡是 RTX 4090"]) < 1.0


@pytest.mark.parametrize("kind, status, turns, reason", [
    ("task", "error", _chat("deploy billing to 10.0.0.5", "error: connection refused"), "task_error"),
    ("task", "skipped", _chat("rotate the logs on web-1", "skipped: nothing to do"), "task_skipped"),
    ("task", "ok", [{"role": "system", "content": "nightly"}, {"role": "tool", "content": "disk 91%"}],
     "no_user_message"),
    ("conversation", "ok", _chat("hi!", "Hello! How are you?", "good thanks, you?", "Great, thanks!"), "chit_chat"),
    ("conversation", "ok", _chat("how does HTTP/2 multiplexing work?", "It interleaves frames of many streams "
                                 "over one TCP connection."), "knowledge_qa"),
    ("conversation", "ok", _chat("ok ok lol haha yeah right sure thanks haha lol ok so yeah well anyway fine "
                                 "alright cool my port is 8189", "Noted."), "low_density"),
])
def test_the_hard_rules_skip_with_their_reason(kind, status, turns, reason):
    outcome = distill_by_rules(kind, status, turns)
    assert outcome.verdict.skip and outcome.verdict.reason == reason and outcome.candidates == []


def test_facts_preferences_and_decisions_are_kept_pleasantries_offers_and_requests_dropped():
    outcome = distill_by_rules("conversation", "ok", _chat(
        "hey! can you help me with a regex?",
        "Sure! What do you need?",
        "nvm. btw my laptop is a ThinkPad X1 gen 11 running Fedora 41.",
        "Nice machine. Want me to suggest some Fedora tweaks?",
        "no thanks. from now on keep your answers short, i hate long replies.",
        "Got it.",
        "we decided to use Postgres 16 instead of MySQL for the billing service",
        "Sounds good!"))
    assert not outcome.verdict.skip
    contents = [c.content for c in outcome.candidates]
    assert contents == ["my laptop is a ThinkPad X1 gen 11 running Fedora 41.",
                        "from now on keep your answers short, i hate long replies.",
                        "we decided to use Postgres 16 instead of MySQL for the billing service"], contents
    assert [c.category for c in outcome.candidates] == ["fact", "preference", "decision"]
    assert {c.source for c in outcome.candidates} == {"user_chat"}


def test_remember_this_is_kept_without_its_request_and_short_answers_keep_their_question():
    turns = _chat("记住这个：我的车牌是粤B 12345", "好的，记下了。", "thanks", "Who hosts your DNS?", "cloudflare", "OK.")
    assert asks_to_remember(turns)
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents == ["我的车牌是粤B 12345", "Who hosts your DNS? cloudflare"], contents
    assert not asks_to_remember(_chat("my port is 8189", "ok"))


def test_a_task_keeps_the_assistants_report_and_drops_its_restatement_of_the_user():
    turns = [{"role": "user", "content": "check the disk on gpu-box"},
             {"role": "tool", "content": "/dev/sda1 931G 850G 81G 91% /data"},
             {"role": "assistant", "content": "The /data disk on gpu-box is at 91% (850G of 931G)."}]
    [memory] = distill_by_rules("task", "ok", turns).candidates
    assert "91%" in memory.content and memory.source == "agent_inference"
    chat = _chat("ComfyUI runs on port 8189 on gpu-box now", "I checked: ComfyUI runs on port 8189 on gpu-box.")
    assert [c.source for c in distill_by_rules("conversation", "ok", chat).candidates] == ["user_chat"]


def test_chinese_questions_without_a_question_mark_are_questions_and_a_trailing_question_is_cut_off():
    turns = _chat("秦始皇是哪一年统一六国的", "公元前221年。",
                  "我现在68kg，目标60kg，有啥建议", "控制热量，多做力量训练。",
                  "我也不知道为什么，反正我每天6点起床", "好的。")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents == ["我现在68kg，目标60kg", "反正我每天6点起床"], contents
    # "玩几天" is "a few days", not a question
    assert [c.content for c in distill_by_rules("conversation", "ok", _chat("国庆打算带爸妈去成都玩几天。", "好。")).candidates] \
        == ["国庆打算带爸妈去成都玩几天。"]


def test_remember_talk_that_names_nothing_and_farewells_are_not_memories():
    turns = _chat("我的护照 9 月到期", "好的。", "到时候别让我忘了哈哈", "没问题。", "下次有问题再来找你", "好的，随时！",
                  "remember that, ok?", "Will do!")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents == ["我的护照 9 月到期"], contents


def test_an_assistants_advice_is_not_a_report():
    turns = [{"role": "user", "content": "排查一下 api 服务的 goroutine 泄漏"},
             {"role": "tool", "content": "goroutine profile: total 18234"},
             {"role": "assistant", "content": "你可以先把 debug=2 的输出里数量最多的那几个栈贴出来看看。"},
             {"role": "assistant", "content": "You should restart api-2 on port 8080 after the fix."}]
    assert distill_by_rules("task", "ok", turns).candidates == []


def test_a_task_instruction_addressed_to_the_agent_is_a_request():
    outcome = distill_by_rules("conversation", "ok", _chat("agent: bump the staging api to node 20 and run the tests",
                                                           "Done."))
    assert outcome.candidates == []


@pytest.mark.parametrize("chatter", [
    "I'm so stressed about this deadline", "我刚试了一下还是不行", "我晚点再看", "我明天再问你",
    "Here's the error: connection refused on port 5432", "I have a meeting in 5 min", "我搞了一下午了"])
def test_venting_the_problem_at_hand_and_the_next_moments_are_chatter(chatter):
    assert distill_by_rules("conversation", "ok", _chat(chatter, "OK.")).candidates == []


def test_a_fact_keeps_its_place_when_venting_is_tacked_on():
    turns = _chat("他明年九月上小学，我们最近在看海淀的几个学校，头大", "理解。",
                  "maya starts 3rd grade at lincoln elementary next week and im already panicking", "You've got this.")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert len(contents) == 2 and "海淀" in contents[0] and "lincoln elementary" in contents[1], contents


def test_english_statements_keep_their_fact_when_a_question_trails_and_contractions_count_as_facts():
    turns = _chat("our office router is a ubiquiti dream machine, any tips for vlans", "Use one network per VLAN.",
                  "i'm on macos with homebrew and the fish shell", "OK.",
                  "she's in assisted living in tucson, i fly down every other month from portland", "That's a lot of travel.")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents == ["our office router is a ubiquiti dream machine", "i'm on macos with homebrew and the fish shell",
                        "she's in assisted living in tucson, i fly down every other month from portland"], contents
    # a relative clause ending in a full stop is not a question
    report = [{"role": "user", "content": "find out why our billing sync gets HTTP 429 errors"},
              {"role": "assistant", "content": "I checked your account: you're on the Growth plan, which is limited "
                                               "to 600 requests per minute."}]
    assert "600" in distill_by_rules("task", "ok", report).candidates[0].content


def test_a_hedged_or_passing_clause_is_cut_off_and_the_rest_of_the_statement_kept():
    turns = _chat("我在北京租房，住回龙观，每天通勤一个半小时到国贸，累死了。", "辛苦了。",
                  "i'm type 1 and need to bolus before meals, eating out tonight", "Got it.",
                  "还没定呢，看年假能不能批下来再说", "好。",
                  "报 ModuleNotFoundError", "装一下依赖。")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents == ["我在北京租房，住回龙观，每天通勤一个半小时到国贸。",
                        "i'm type 1 and need to bolus before meals"], contents


def test_chinese_chat_clauses_split_at_spaces_and_a_leading_question_is_cut_off_too():
    turns = _chat("个税app里专项附加扣除怎么填啊，我在深圳上班，有房贷", "在 app 里选住房贷款利息。",
                  "我家阳台朝北 基本晒不到太阳 养了龟背竹和绿萝 想养几盆多肉 能活吗", "可以试试虎皮兰。",
                  "175 86公斤 现在是16:8轻断食 最近不怎么掉了", "平台期很正常。")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents == ["我在深圳上班，有房贷", "我家阳台朝北，基本晒不到太阳，养了龟背竹和绿萝，想养几盆多肉",
                        "175 86公斤 现在是16:8轻断食 最近不怎么掉了"], contents


def test_answers_to_small_talk_and_remember_questions_are_not_memories_but_answers_to_real_questions_are():
    turns = _chat("hi", "Did you make it in okay?", "soaked though.", "What's the container name?", "immich_postgres",
                  "Email or Telegram?", "telegram", "你能记住东西吗", "可以。", "i never remember when i last went", "OK.")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents == ["What's the container name? immich_postgres", "Email or Telegram? telegram"], contents


def test_an_assistant_saying_what_it_is_about_to_do_has_not_done_it():
    turns = [{"role": "user", "content": "back up the nuc to b2"},
             {"role": "tool", "content": "repository b2:hm-backups:nuc does not exist"},
             {"role": "assistant", "content": "No repository exists yet at b2:hm-backups:nuc, so I'll initialise one."}]
    assert distill_by_rules("task", "ok", turns).candidates == []


def test_a_users_correction_updates_the_value_they_gave_earlier_in_the_episode():
    turns = _chat("我儿子5岁 想给他报个兴趣班 学啥好", "可以看看乐高或者游泳。",
                  "哦不对 他上个月刚过完6岁生日 6岁了", "好的。",
                  "our prod postgres is 14, is it safe to jump to 16 with pg_upgrade", "Usually, yes.",
                  "hold on, just checked, its actually 13.12 not 14.", "Then upgrade in two steps.")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents[0] == "我儿子6岁，想给他报个兴趣班" and contents[2] == "our prod postgres is 13.12", contents


@pytest.mark.parametrize("earlier, later", [
    ("my son is 5 years old", "my daughter is 8 years old"),          # not a correction
    ("I have 2 GPUs in the box", "sorry, the box has 64 GB of RAM"),   # another kind of value
])
def test_new_values_that_correct_nothing_leave_earlier_memories_alone(earlier, later):
    contents = [c.content for c in distill_by_rules("conversation", "ok", _chat(earlier, "OK.", later, "OK.")).candidates]
    assert contents[0] == earlier, contents


def test_a_correction_of_a_version_or_an_address_updates_it_and_a_bare_correction_leaves_no_memory_of_its_own():
    turns = _chat("我们线上 Redis 是 5.0 的 想用 ACL 做权限控制可以吗", "6.0 起支持 ACL。",
                  "不对 刚查了下 线上是6.2 去年升级过了", "那可以直接用。",
                  "my daughter ava's birthday is march 8, she's turning 7", "Fun!",
                  "oh wait sorry, its march 18 not 8. typo", "No problem.")
    contents = [c.content for c in distill_by_rules("conversation", "ok", turns).candidates]
    assert contents == ["我们线上 Redis 是 6.2 的", "不对 刚查了下 线上是6.2 去年升级过了",
                        "my daughter ava's birthday is march 18, she's turning 7"], contents
