"""Cue phrases of memorable statements, in Chinese and English (general language, not any data
set's vocabulary): what marks a preference, a decision, a constraint, a fact about the speaker's
world, an explicit "remember this", a correction; and what marks chatter (pleasantries, fillers,
questions, offers, transient remarks).

Latin cues match whole words (case-insensitive); Chinese cues match as substrings.
"""

from __future__ import annotations

import re
from typing import Final, Iterable


def _latin(phrases: Iterable[str]) -> re.Pattern[str]:
    """Whole-word phrases; an apostrophe may be typed curly or left out ("i'm", "i’m", "im")."""
    alts = sorted({p.lower() for p in phrases}, key=len, reverse=True)
    return re.compile(r"(?<![\w'’])(?:" + "|".join(re.escape(a).replace(r"\ ", r"\s+").replace("'", "['’]?")
                                                  for a in alts) + r")(?![\w])", re.IGNORECASE)


def _cjk(phrases: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(p) for p in sorted(set(phrases), key=len, reverse=True)))


REMEMBER_EN: Final = re.compile(
    r"^\s*(?:(?:ok|okay|also|and|btw|hey|so)[,\s]+)*(?:please |pls )?remember\b(?!\s+(?:when|if|whether|how|what|where|who|why))"
    r"|\b(?:you to|please|pls|can you|could you|will you|gotta|need you to) remember\b|" + _latin([
    "remember this", "remember that", "please remember", "note that", "make a note", "take a note",
    "note this", "don't forget", "do not forget", "keep in mind", "for future reference", "for the record",
    "save this", "write this down", "jot down", "memorize"]).pattern, re.IGNORECASE)
REMEMBER_ZH: Final = _cjk(["别让我忘", "记住", "记一下", "记下", "记好", "别忘了", "不要忘", "别忘记", "帮我记", "备忘", "记着",
                           "以后要记得", "记得"])
# what is left of "remember" talk that names no content ("到时候别让我忘了", "remember that, ok?")
REMEMBER_DEICTIC: Final = re.compile(
    r"(?<![\w'])(?:this|that|it|then|please|pls|ok|okay|for me|for later|later|all|too|as well)(?![\w])"
    r"|到时候|这个|那个|这件事|这事|这点|这条|一下|帮我|给我|请|哈+|啊|呀|吧|哦|嘛|啦|了",
    re.IGNORECASE)
# "remember this: X" -> "X": the request itself is not the memory
REMEMBER_PREFIX: Final = re.compile(
    r"^\s*(?:(?:ok|okay|also|and|btw|please|pls|hey)[,\s]+)*(?:please\s+)?(?:remember(?:\s+(?:this|that))?|note(?:\s+(?:this|that))?|"
    r"make a note(?: of this| that)?|don'?t forget(?: that)?|do not forget(?: that)?|keep in mind(?: that)?|"
    r"for (?:future reference|the record)|save this)\s*[:：,，\-—]*\s*"
    r"|^\s*(?:另外|还有|对了|顺便)?[，,\s]*(?:请|帮我|麻烦)?(?:记住|记一下|记下|记好|别忘了|不要忘了?|帮我记一下|记着)"
    r"(?:这个|这件事|一下|这点|这条)?[：:，,、\s]*", re.IGNORECASE)

PREFERENCE_EN: Final = _latin(["loves", "hates", "likes", "dislikes", "obsessed with", "is into", "i'm into", "are into",
    "can't stand", "fan of",
    "prefer", "prefers", "preferred", "i like", "i love", "i hate", "i don't like", "i do not like", "i dislike",
    "i can't stand", "i enjoy", "my favorite", "my favourite", "i'd rather", "i would rather", "rather than",
    "i always", "i never", "i usually", "i tend to", "please always", "please never", "i want", "i'd like",
    "i like it when", "annoys me", "annoy me", "drives me crazy", "i'm a fan of", "not a fan of", "keep it short",
    "give me the", "just give me", "don't want"])
# a user's instruction for the future ("keep answers short", "以后都用英文") is a preference
INSTRUCTION_EN: Final = re.compile(
    r"^\s*(?:(?:please|pls|plz)\s+)?(?:keep|use|always|never|don'?t|do not|stop|avoid|make sure|call me|write|reply|answer|"
    r"respond|remind me|notify me|ping me|send|format|put|skip|only|no more|from now on|going forward|in future|"
    r"next time)\b", re.IGNORECASE)
INSTRUCTION_ZH: Final = _cjk(["以后", "每次", "都用", "一律", "统一", "回答我", "回复我", "叫我", "称呼我", "提醒我",
                              "通知我", "下次", "今后", "往后", "默认用", "默认"])
PREFERENCE_ZH: Final = _cjk(["一直用", "一直都", "向来",
    "喜欢", "不喜欢", "偏好", "讨厌", "更喜欢", "最爱", "习惯", "宁愿", "倾向", "偏爱", "受不了", "一般都", "总是",
    "从来不", "不爱", "爱吃", "不吃", "想要", "希望你", "以后回答", "以后回复", "请直接", "不要太长", "简短", "先给结论",
    "先说结论", "口味", "喜好"])
DECISION_EN: Final = _latin(["i'll use", "i'll go with", "i'm going with", "i'll stick with", "we'll do", "i'll do",
    "gonna use", "gonna go with", "going to use",
    "decided", "decide", "we'll use", "we will use", "we're using", "we are using", "going with", "go with",
    "went with", "switch to", "switched to", "switching to", "chose", "choose", "picked", "settled on",
    "we'll go", "let's go with", "let's use", "will use", "plan to", "planning to", "migrate to", "migrating to",
    "moved to", "moving to", "instead of", "we agreed", "agreed to", "the plan is", "final answer",
    "opted for", "we'll stick with", "stick with", "replace", "replaced"])
DECISION_ZH: Final = _cjk(["那就买", "那就用", "那就选", "那就订", "那就报", "那就定", "就买",
    "决定", "选择", "选了", "改用", "换成", "换到", "采用", "就用", "定了", "打算", "计划", "迁移到", "迁到", "以后用",
    "统一用", "确定用", "确定了", "不用了", "放弃", "改为", "改成", "替换", "换掉", "上线", "方案是", "就这么定"])
CONSTRAINT_EN: Final = _latin(["seasick", "carsick", "motion sickness", "diabetic", "diabetes", "asthma", "celiac",
    "gluten", "lactose", "vegan", "vegetarian", "pregnant", "gout",
    "must", "must not", "mustn't", "never", "don't ever", "do not", "don't", "can't", "cannot", "can not",
    "not allowed", "only", "no more than", "at most", "at least", "deadline", "due", "by friday", "by monday",
    "allergic", "allergy", "intolerant", "intolerance", "avoid", "should not", "shouldn't", "need to", "needs to", "required", "requires",
    "limit", "budget", "max", "maximum", "minimum", "forbidden", "no notifications", "not before", "not after",
    "before", "until", "without", "strictly"])
CONSTRAINT_ZH: Final = _cjk(["晕船", "晕车", "晕机", "糖尿病", "高血压", "痛风", "哮喘", "乳糖", "素食", "不了", "不好",
    "必须", "不能", "不要", "别", "禁止", "不允许", "只能", "至少", "最多", "截止", "之前", "过敏", "不耐受", "避免", "不可以",
    "一定要", "务必", "不得", "严禁", "限制", "预算", "上限", "下限", "不超过", "以内", "忌", "不准", "千万别",
    "之后才", "才能"])
SELF_EN: Final = _latin([
    "i", "i'm", "i am", "i've", "i have", "my", "mine", "we", "we're", "we've", "our", "ours", "us", "me",
    "my wife", "my husband", "my son", "my daughter", "my mom", "my dad", "my team", "my boss"])
SELF_ZH: Final = _cjk(["我的", "我们", "我是", "我在", "我有", "我家", "我用", "我现在", "我们家", "我老婆", "我老公",
                       "我儿子", "我女儿", "我妈", "我爸", "我们团队", "我司", "公司", "我"])
FACT_EN: Final = _latin([
    "is", "are", "was", "runs", "running", "runs on", "lives", "live", "located", "works", "work at", "works at",
    "uses", "using", "version", "port", "path", "address", "born", "birthday", "moved",
    "installed", "has", "have", "owns", "costs", "takes", "listens on", "hosted", "configured", "set to",
    "points to", "stored", "lives in", "based in", "deployed", "mounted", "password", "account", "ip", "i'm a",
    "i am a", "i work", "i'm an", "i am an", "i'm on", "i'm in", "i'm at", "we're on", "we're in", "we're at",
    "she's", "he's", "they're", "she is", "he is", "gets", "goes", "lives", "takes", "does"])
FACT_ZH: Final = _cjk([
    "是", "在", "用的是", "版本", "端口", "路径", "地址", "位于", "装了", "配置", "生日", "工作", "住在", "放在",
    "部署", "挂载", "跑在", "运行在", "账号", "密码", "花了", "需要", "耗时", "占用", "大小", "容量", "型号", "显卡",
    "内存", "硬盘", "有", "养了", "出生", "搬到", "用"])
NAMING_EN: Final = _latin(["named", "called", "my name is", "his name is", "her name is", "goes by", "nickname"])
NAMING_ZH: Final = _cjk(["叫", "名字", "名叫", "称呼", "昵称"])
TIME_EN: Final = _latin(["christmas", "thanksgiving", "easter", "new year", "new year's", "summer break",
    "spring break", "holidays",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue", "tues", "wed",
    "thu", "thur", "thurs", "fri", "sat", "sun", "weekdays", "weekends", "weekend", "tomorrow", "next week",
    "next month", "next year", "every day", "daily", "weekly", "monthly", "yearly", "every morning",
    "every night", "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
    "nov", "dec", "quarter", "end of the month", "this week", "this month", "am", "pm"])
TIME_ZH: Final = _cjk(["春节", "过年", "国庆", "中秋", "端午", "清明", "元旦", "五一", "寒假", "暑假",
    "下周", "下个月", "下个季度", "明天", "后天", "月底", "年底", "周一", "周二", "周三", "周四", "周五", "周六", "周日",
    "周末", "工作日", "星期", "每周", "每天", "每月", "每年", "早上", "晚上", "凌晨", "季度", "号", "点", "月份",
    "上午", "下午"])
CORRECTION_EN: Final = _latin([
    "actually", "now", "changed to", "changed", "instead", "no longer", "not anymore", "any more", "update:",
    "correction", "i was wrong", "it's now", "is now"])
CORRECTION_ZH: Final = _cjk(["改成", "现在", "不再", "其实", "改为", "更正", "纠正", "之前说错", "说错了", "已经换",
                             "换了", "变成"])

PLEASANTRY_EN: Final = _latin([
    "hi", "hello", "hey", "heya", "yo", "thanks", "thank you", "thx", "ty", "ok", "okay", "k", "sure", "great",
    "cool", "nice", "got it", "sounds good", "lol", "lmao", "haha", "hahaha", "bye", "see you", "see ya",
    "good morning", "good night", "good evening", "np", "no problem", "you're welcome", "awesome", "perfect",
    "alright", "all right", "yes", "yeah", "yep", "yup", "no", "nope", "wow", "oh", "ah", "hmm", "uh", "um",
    "cheers", "appreciate it", "much appreciated", "will do", "done", "nice one", "brilliant", "amazing",
    "of course", "exactly", "right", "true", "indeed", "makes sense", "fair enough", "good", "fine", "sorry",
    "no worries", "welcome", "thanks a lot", "thank you so much", "ttyl", "gn", "gm", "please", "pls", "so",
    "well", "anyway", "btw", "by the way", "also", "and", "oh well", "for sure", "definitely", "totally",
    "that's it", "that's all", "nothing else", "all good", "noted", "understood", "i see", "ah ok", "oh ok",
    "no thanks", "no thank you", "nah", "meh", "whatever", "not really", "barely", "not now", "maybe later", "not needed", "not yet", "later", "nothing yet", "nothing much", "not much",
    "tbh", "ngl", "idk", "trying that", "i'll try that", "will try that", "not bad", "not too bad", "stressed", "so stressed", "frustrated", "overwhelmed",
    "exhausted", "freaking out", "panicking", "driving me nuts", "i'm dying", "omg", "ugh", "i'll try", "will try", "i'll give it a try", "talk soon", "catch you later"])
PLEASANTRY_ZH: Final = _cjk([
    "你好", "您好", "嗨", "哈喽", "谢谢", "多谢", "感谢", "好的", "好吧", "好", "嗯嗯", "嗯", "哈哈", "哈", "嘿嘿",
    "呵呵", "收到", "明白", "了解", "知道了", "没问题", "不客气", "再见", "拜拜", "早上好", "早安", "晚安", "下午好",
    "晚上好", "辛苦了", "辛苦", "太好了", "太棒了", "棒", "可以", "行", "对", "对的", "是的", "没事", "OK", "ok",
    "哦", "噢", "啊", "呀", "呢", "吧", "啦", "嘛", "了", "的", "好滴", "好嘞", "嗯呢", "厉害", "牛", "赞", "666",
    "谢啦", "谢了", "麻烦了", "有劳", "好久不见", "在吗", "在不在", "你呢", "还好", "挺好", "不错", "一样", "哈哈哈",
    "抱歉", "不好意思", "稍等", "等一下", "我看看", "先这样", "就这样", "没了", "就这些", "懂了", "行吧", "先不用",
    "不用了", "不用", "不需要", "暂时不用", "不管了", "不知道", "随便问问", "随便", "就这样", "挺清楚", "以后再说", "再说吧", "算了", "不了", "够了", "有道理", "再来找你",
    "再找你", "回头再聊", "下次再聊", "下次聊", "下次有问题", "下次有事", "改天再", "回头再", "有问题再来找你", "有事再找你", "有问题再来", "有问题再问", "再问你", "焦虑", "郁闷", "头疼", "头大", "抓狂", "心累", "我试试", "试试看"])
OFFER_EN: Final = re.compile(
    r"^\s*(?:do you want|would you like|want me to|want an?|want the|want some|need an?|need the|need me to|shall i|should i|can i help|let me know|if you want|"
    r"anything i can|something i can|i can also|i could|feel free|happy to help|glad to help|hope this helps|is there anything|anything else|"
    r"here(?:'s| is) (?:a|an|the|how)|sure[,!]? here)", re.IGNORECASE)
OFFER_ZH: Final = _cjk(["需要我", "要不要我", "我可以帮", "还有什么", "有什么需要", "希望对你", "希望能帮", "随时告诉",
                        "可以帮你", "我来帮你", "我帮你", "如果你需要", "如果需要的话", "请问还有"])
# an assistant reporting what it found or did (first person, or a terse "noted:" / "set for ...")
REPORT_EN: Final = _latin([
    "i checked", "i looked", "i found", "i confirmed", "i verified", "i ran", "i added", "i installed",
    "i created", "i moved", "i restarted", "i fixed", "i've added", "i've set", "i set", "i updated",
    "i changed", "i saved", "i noted", "i've noted", "i'll remember", "noted:", "saved:", "done:", "set:",
    "set for", "reminder set", "scheduled for", "booked", "blocked", "it shows", "the output", "according to",
    "turns out", "found that", "finished in", "completed in", "took", "summary:", "result:", "results:"])
REPORT_ZH: Final = _cjk(["我跑了", "我加了", "已添加", "已加", "已安装", "已创建", "已重启", "已修复", "已经帮你",
                         "帮你设", "我查了", "查了一下", "查到", "检查了", "确认了", "显示", "输出", "耗时",
                         "已完成", "记下了", "已记录", "帮你记", "我设置", "已设置", "已更新", "已修改", "已保存",
                         "结果：", "总结："])
# an assistant's advice to the user ("you can paste the stack", "你可以先把…贴出来") is not the user's world
ADVICE_EN: Final = re.compile(
    r"^\s*(?:(?:so|ok|okay|then|first|next|also|alternatively)[,\s]+)*(?:you can|you could|you should|you might|you may want|"
    r"you'll want|you need to|you'd|try|i'd suggest|i suggest|i'd recommend|i recommend|consider|make sure|"
    r"it's worth|it might be worth|a good idea|the best way|one option|another option|if you)\b", re.IGNORECASE)
ADVICE_ZH: Final = re.compile(
    r"^\s*(?:(?:那|那么|所以|首先|然后|另外|其次|或者)[，,\s]*)?(?:你可以|你也可以|可以先|可以试试|你可以试试|试试|建议|"
    r"我建议|推荐你|你需要|你得|你要|你先|先把|不妨|最好|记得|如果你|如果想|要是)")
# an assistant saying what it is about to do ("so I'll initialise one", "我写一个脚本") has not done it yet
INTENT_EN: Final = re.compile(
    r"\b(?:i'll|i will|i'm going to|let me|i can|i'd)\s+(?!remember\b)\w+|^\s*(?:checking|looking|running|fetching|"
    r"connecting|trying|starting|searching|scanning|reading|opening)\b", re.IGNORECASE)
INTENT_ZH: Final = re.compile(
    r"^\s*(?:好的?[，,\s]*)?(?:我来|我先|我写一个|我会|我将|我这就|接下来我|下面我|我打算|我看一下|我查一下|我检查一下|"
    r"我去看|我去查|正在|马上)")
# a game in the conversation (riddles, jokes, quizzes): answers to its questions are moves, not facts
GAME: Final = re.compile(
    r"(?i)\b(?:riddles?|jokes?|quiz|quiz me|trivia|guessing game|word game|pun|practice|how would you say|"
    r"role ?play)\b|谜语|笑话|脑筋急转弯|猜谜|段子|考考我|练习一下|角色扮演")
# small talk an assistant asks ("how's your day?"): an answer to it is not a memory
SMALL_TALK_EN: Final = _latin([
    "how are you", "how's your day", "how is your day", "how's it going", "how was your", "how are things",
    "what's up", "whats up", "ready for", "managing to", "how can i help", "anything else", "anything in particular",
    "how do you feel", "feeling", "how's the weather", "doing anything fun", "any plans", "good weekend",
    "sleep well", "how have you been", "another one", "one more", "on your plate", "on the agenda today",
    "up to today", "what's new", "did you make it", "make it home",
    "get home", "get there okay", "get there ok", "how was the", "how did it go", "how'd it go", "you ok", "you okay", "what can i do for you", "what brings you",
    "long day", "long week", "busy day", "busy week", "burning questions", "other questions", "any questions",
    "anything fun", "any news", "how's life", "what are you up to", "how about you", "and you", "what about you"])
SMALL_TALK_ZH: Final = _cjk([
    "感觉怎么样", "怎么样啊", "还好吗", "最近如何", "最近怎么样", "有什么可以帮", "有什么需要", "还有别的", "吃了吗",
    "睡得好", "心情", "累不累", "周末愉快", "过得怎么样", "在忙什么", "有什么计划", "计划吗", "忙吗", "今天过得",
    "忙不忙", "还有别的问题", "还有问题", "再来一个", "再讲一个", "还要听"])
QUESTION_END: Final = re.compile(
    r"[?？]\s*$|(?:吗|呢|么|没有|不|行不行|好不好|对不对|是不是|能不能|可不可以|要不要)[。.！!~～]?\s*$")
# a Chinese question often drops its "？": an interrogative word asks one ("秦始皇是哪一年统一六国的")
QUESTION_WORD_ZH: Final = re.compile(
    r"什么|啥|怎么|怎样|为什么|为啥|哪|多少|几点|谁|是否|有没有|能否|如何|是不是|多久|多长时间|多大|多远|多高|要不要|能不能|可不可以")
# a question word that does not ask: "不知道为什么", "不怎么掉了", "无论哪个"
NOT_ASKING_ZH: Final = re.compile(
    r"(?:不知道|不清楚|不确定|不懂|不管|无论|不论|随便|没)(?:为什么|为啥|什么|啥|怎么|怎样|哪|多少|谁|如何)|不怎么")
QUESTION_START_EN: Final = re.compile(
    r"^\s*(?:what|why|how|when|where|which|who|whose|can you|could you|would you|do you|does|did|is there|are there|"
    r"is it|should|will you|have you|any idea|explain|tell me|help me understand|is|are|was|were|do|can|could|"
    r"would|will|has|have|am i)\b"
    r"|^\s*[\w.+#-]+ (?:or|vs\.?) [\w.+#-]+(?:\s+(?:for|on|in|with)\b.*)?$", re.IGNORECASE)
# a question in a later clause ("my tomatoes have spots, what's going on")
QUESTION_CLAUSE_EN: Final = re.compile(
    r"\b(?:how do i|how can i|how should i|how do we|how can we|what should i|what do i|what can i|where do i|"
    r"where can i|which one should i)\b"
    r"|(?:^|[,;.:]\s*|\b(?:so|and|but)\s+)(?:whats|what's|what is|what are|what should|how do i|how can i|how should i|"
    r"why is|why does|why do|any idea|any tips|any ideas|is there a way|should i|can i)\b", re.IGNORECASE)
# a clause that asks without a question word first ("..., any good youtube channels")
TRAILING_ASK_EN: Final = re.compile(
    r"^\s*(?:(?:so|and|but|or|pls|please|lol)\s+)*(?:any (?:good |other |better )?(?:idea|ideas|tips?|advice|suggestions?|"
    r"recommendations?|thoughts?|channels?|books?|options?|alternatives?)|thoughts|ideas|help|recommendations?|"
    r"what do you (?:think|recommend|suggest)|which one|why|how come|or not|right|no)\b", re.IGNORECASE)
TRANSIENT_EN: Final = _latin([
    "brb", "afk", "be right back", "grabbing lunch", "getting coffee", "gotta go", "talk later", "one sec",
    "one moment", "hold on", "right now i'm", "i'm tired", "i'm bored", "i'm hungry", "going to bed",
    "heading out", "just woke up", "let me think", "let me check", "give me a sec", "back now", "i'm back",
    "tonight", "for now", "right now", "wrong tab", "never mind", "nvm", "stuck at", "last night", "this morning",
    "just now", "at the moment", "for hours", "going for a", "trying that", "trying this", "trying it", "gonna try", "usage", "% used", "% full", "free space", "disk space", "reclaimable",
    "unused images", "used space", "earlier today", "a minute ago", "called earlier", "waking up", "killing time", "still waking", "on my way"])
TRANSIENT_ZH: Final = _cjk(["今晚先", "今天先", "现在先", "现在就", "刚才", "昨晚", "今早", "等下", "算了", "我去吃饭", "去吃饭了", "马上回来", "等我一下", "我先去", "先下了", "困了", "我去睡",
                            "我回来了", "让我想想", "我想想", "我先忙", "等会儿", "待会", "一会儿再", "晚点", "晚些", "回头看",
                            "分钟后", "马上要", "等会", "刚刚", "可回收", "我先在", "先试试", "试一下", "可用空间", "剩余空间", "占用率", "使用率", "空间不足", "已经用了", "一下午了", "一上午了", "一晚上了", "一整天了"])
# "in 5 min", "in a couple of hours": about the next moments
SOON_EN: Final = re.compile(
    r"\bin (?:\d+|a few|a couple(?: of)?|an?|one|two|five|ten|fifteen|twenty|thirty|half an) ?"
    r"(?:min|mins|minutes?|hours?|hrs?|secs?|seconds?)\b", re.IGNORECASE)
# a request for the task at hand ("can you list the cron jobs", "帮我看看这段代码") is not a memory
REQUEST_EN: Final = re.compile(
    r"^\s*(?:(?:agent|bot|assistant|ai|computer)\s*[:：,]\s*)?(?:(?:hey|hi|ok|so|also|and|pls|please)[,\s]+)*(?:can you|could you|would you|will you|can u|pls|please|"
    r"help me|let's|lets|list|show me|show|check|tell me|give me|find|fix|write|draft|make|add|create|run|"
    r"debug|look at|take a look|explain|summari[sz]e|translate|convert|generate|calculate|compute|review|"
    r"rewrite|refactor|set up|setup|install|update|restart|start|schedule|book|order|send|i need you to|"
    r"i want you to|pull|upgrade|downgrade|deploy|build|test|clean up|rename|delete|remove|fetch|download|"
    r"eli5|bump|back up|backup|compare|plan|suggest|recommend|research|look up|figure out)\b", re.IGNORECASE)
REQUEST_ZH: Final = re.compile(
    r"^\s*(?:(?:那|那么|好|好的|嗯|另外|还有|然后)[，,\s]*)?(?:请|麻烦|你)?(?:帮我|帮忙|给我|替我|你帮|能不能|可不可以|"
    r"可以帮|开始|看下|看看|查一下|查下|算一下|写一个|写个|生成|翻译|总结|解释|列一下|列出|检查|统计|把|升级|部署|"
    r"整理|对比|推荐|规划|安排一下|跑一下)")
# hedges, indecision and complaints about the moment weigh against a statement being a lasting memory
STANDING_EN: Final = _latin(["from now on", "going forward", "always", "never", "every time", "whenever",
                             "in future", "in the future", "next time", "by default", "stop using", "stop doing",
                             "don't use", "do not use", "no more", "call me", "keep it", "keep them",
                             "keep answers", "keep replies", "don't ever", "anymore", "any more"])
STANDING_ZH: Final = _cjk(["以后", "今后", "往后", "每次", "一律", "默认", "下次", "永远", "总是"])
HEDGE_EN: Final = _latin(["maybe", "perhaps", "i guess", "i wonder", "not sure", "might", "probably", "i think",
                          "torn between", "deciding between", "considering", "thinking about", "giving me",
                          "not working", "is broken", "keeps crashing", "so slow", "too slow", "too long",
                          "vent", "venting", "yelling", "screamed", "ugh", "annoying", "sick of", "tired of",
                          "can't keep", "cant keep", "again", "keeps", "today", "honestly", "whatever", "overrated",
                          "underrated", "sounds nice", "should be illegal", "you only live once", "yolo",
                          "failing", "timing out", "times out", "crashed", "crashing", "can't connect",
                          "cannot connect", "won't start", "doesn't work", "isn't working", "throws", "still not",
                          "same error", "didn't work", "didn't help", "no luck", "here's the error", "error:",
                          "traceback", "stack trace", "almost out of", "running out of", "is throwing", "are throwing", "throwing", "suddenly", "super slow",
                          "really slow", "so laggy", "lagging", "keeps failing", "went down", "is down", "out of disk", "out of space", "not decided", "haven't decided", "undecided", "still deciding", "delayed", "getting an error", "got an error", "i read that", "i heard", "heard that",
                          "someone told me", "people say", "no wonder", "that's why", "thats why", "that explains", "rumor", "rumour"])
HEDGE_ZH: Final = _cjk(["可能", "也许", "大概", "不确定", "或许", "好像", "说不定", "纠结", "在考虑", "犹豫", "要不要",
                        "太卡", "太贵", "太长", "太慢", "太麻烦", "半天", "报错了", "挂了", "太累", "累死", "烦死",
                        "气死", "崩溃", "今天", "连不上", "报错", "打不开", "崩了", "卡住", "超时了", "起不来",
                        "跑不起来", "用不了", "有点困", "好困", "还是不行", "还没定", "没想好", "没决定", "还没决定", "延误", "再说", "应该还", "好厉害", "越来越", "特别严重", "老是卡", "一卡一卡", "特别慢",
                        "很慢", "好慢", "突然", "告警", "快满了", "满了", "总是记不住", "记不住", "听说", "据说", "有人说", "网上说", "难怪", "原来是", "原来不",
                        "不行啊", "没反应", "没用啊", "不太懂", "没懂", "看不懂", "搞不懂"])

# an error being hit right now ("报 ModuleNotFoundError", "exit code 137")
PROBLEM: Final = re.compile(r"\b\w*(?:Error|Exception)\b|\bexit (?:code|status) \d+|\bsegfault|\bcore dumped|\bOOM\b")
# words of no content, for information density (English stop words; Chinese function characters)
STOP_EN: Final = frozenset("""a an the and or but if then so of to in on at by for with from as is are was were be been
being am do does did doing have has had having it its it's this that these those there here i me my we us our you your
he him his she her they them their what which who whom whose when where why how all any both each few more most other
some such no nor not only own same than too very can will just should now ok okay yes yeah yep lol haha hi hello hey
thanks thank thx ty oh ah um uh hmm well also really like just got get gonna wanna kinda sorta pretty much thing things stuff
lot lots bit sure cool nice great good fine alright right let lets let's me im i'm you're it's that's what's don't
didn't doesn't isn't aren't wasn't weren't won't wouldn't can't couldn't shouldn't i'll you'll we'll i've you've we've
i'd you'd we'd would could might may must shall about""".split())
STOP_ZH: Final = frozenset("的了吗呢啊吧哦嗯哈呀啦嘛么是我你他她它们这那就都也还很在有和与或而且但又再才刚把被给让对个些么啥呗咯哇噢嘿呵好")
