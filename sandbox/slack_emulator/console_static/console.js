/* The Slack emulator's console: a small Slack-like client over the emulator's JSON routes
 * (sandbox/slack_emulator/console.py). No build step, no dependencies.
 *
 * Everything shown is built with DOM nodes: text that came from the app or a person is set as text
 * (textContent / text nodes), never parsed as HTML. mrkdwn and Block Kit are rendered by the small
 * renderers below (Slack docs "Formatting text for app surfaces", "Block Kit reference").
 */
(function () {
  "use strict";

  const POLL_MS = 1000;
  const NOTICE_MS = 9000;
  const REQUIRED = "Please complete this required field.";

  const EMOJI = {
    "+1": "👍", thumbsup: "👍", "-1": "👎", tada: "🎉", heart: "❤️", eyes: "👀", wave: "👋", rocket: "🚀",
    white_check_mark: "✅", heavy_check_mark: "✔️", x: "❌", heavy_multiplication_x: "✖️", warning: "⚠️",
    no_entry: "⛔", no_entry_sign: "🚫", stop_sign: "🛑", octagonal_sign: "🛑", grey_question: "❔", question: "❓",
    information_source: "ℹ️", bell: "🔔", no_bell: "🔕", hourglass: "⌛", hourglass_flowing_sand: "⏳",
    alarm_clock: "⏰", red_circle: "🔴", large_green_circle: "🟢", large_yellow_circle: "🟡", large_blue_circle: "🔵",
    white_circle: "⚪", black_circle: "⚫", white_small_square: "▫️", black_small_square: "▪️",
    file_cabinet: "🗄️", arrows_counterclockwise: "🔄", repeat: "🔁", twisted_rightwards_arrows: "🔀",
    speech_balloon: "💬", mag: "🔍", gear: "⚙️", checkered_flag: "🏁", bar_chart: "📊",
    chart_with_upwards_trend: "📈", chart_with_downwards_trend: "📉", zipper_mouth_face: "🤐", test_tube: "🧪",
    paperclip: "📎", loud_sound: "🔊", lock: "🔒", unlock: "🔓", key: "🔑", inbox_tray: "📥", outbox_tray: "📤",
    robot_face: "🤖", memo: "📝", computer: "💻", desktop_computer: "🖥️", package: "📦", sparkles: "✨", fire: "🔥",
    zap: "⚡", shield: "🛡️", scroll: "📜", clipboard: "📋", pushpin: "📌", calendar: "📅", spiral_calendar_pad: "🗓️",
    link: "🔗", bust_in_silhouette: "👤", busts_in_silhouette: "👥", construction: "🚧", hammer_and_wrench: "🛠️",
    arrow_up: "⬆️", arrow_down: "⬇️", arrow_right: "➡️", small_red_triangle: "🔺", small_red_triangle_down: "🔻",
    pause_button: "⏸️", arrow_forward: "▶️", money_with_wings: "💸", moneybag: "💰", coin: "🪙", bulb: "💡",
    thinking_face: "🤔", raised_hands: "🙌", clap: "👏", ok_hand: "👌", point_right: "👉", sos: "🆘",
    wastebasket: "🗑️", heavy_minus_sign: "➖", heavy_plus_sign: "➕", thread: "🧵", page_facing_up: "📄",
  };
  const STYLE_TAGS = { "*": "b", _: "i", "~": "s" };
  const FORMAT = /(^|[^\p{L}\p{N}])([*_~])(?=[^\s*_~])([^\n]*?[^\s])\2(?![\p{L}\p{N}])/u;
  const ATOM_BASE = 0xe000;

  const params = new URLSearchParams(location.search);
  const S = {
    as: params.get("as") || "",
    view: params.get("view") || "",
    thread: params.get("thread") || null,
    version: null,
    data: null,
    seen: null,
    modalKey: null,
    fetching: false,
    again: false,
    noticeTimer: null,
    lastView: null,
  };

  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------------ DOM helpers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function unescapeEntities(text) {
    return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }

  function emojiText(text) {
    return text.replace(/:([a-z0-9_+-]+):/g, (match, name) => EMOJI[name] || match);
  }

  function safeUrl(url) {
    return /^(https?:|mailto:)/i.test(url) ? url : null;
  }

  function link(url, label) {
    const href = safeUrl(url);
    if (!href) return document.createTextNode(label || url);
    return el("a", { href, target: "_blank", rel: "noopener noreferrer" }, label || url.replace(/^mailto:/i, ""));
  }

  // ------------------------------------------------------------------ people, channels, time

  function people() {
    return (S.data && S.data.people) || [];
  }

  function me() {
    return people().find((p) => p.id === (S.data && S.data.me)) || { tz: "UTC", name: "" };
  }

  function userName(id) {
    const found = people().find((p) => p.id === id);
    return found ? found.name : id;
  }

  function isBot(id) {
    return Boolean(S.data && S.data.bot && S.data.bot.id === id);
  }

  function channelById(id) {
    const all = S.data ? [...S.data.channels, ...S.data.dms] : [];
    return all.find((c) => c.id === id);
  }

  function zone() {
    return me().tz || "UTC";
  }

  function tsDate(ts) {
    return new Date(parseFloat(ts) * 1000);
  }

  function clock(date) {
    return new Intl.DateTimeFormat("en-US", { timeZone: zone(), hour: "numeric", minute: "2-digit" }).format(date);
  }

  function dayKey(date) {
    return new Intl.DateTimeFormat("en-CA", { timeZone: zone(), year: "numeric", month: "2-digit", day: "2-digit" }).format(date);
  }

  function dayLabel(date) {
    const key = dayKey(date);
    if (key === dayKey(new Date())) return "Today";
    if (key === dayKey(new Date(Date.now() - 864e5))) return "Yesterday";
    return new Intl.DateTimeFormat("en-US", { timeZone: zone(), weekday: "long", month: "long", day: "numeric" }).format(date);
  }

  function ordinal(day) {
    const tens = day % 100;
    if (tens >= 11 && tens <= 13) return day + "th";
    return day + ({ 1: "st", 2: "nd", 3: "rd" }[day % 10] || "th");
  }

  /** A ``<!date^ts^format>`` token in the viewer's time zone (Slack doc "Formatting dates"). */
  function slackDate(seconds, format) {
    const date = new Date(seconds * 1000);
    const part = (options) => new Intl.DateTimeFormat("en-US", { timeZone: zone(), ...options }).format(date);
    const day = Number(part({ day: "numeric" }));
    const now = Date.now();
    const key = dayKey(date);
    const relative =
      key === dayKey(new Date(now)) ? "today" : key === dayKey(new Date(now - 864e5)) ? "yesterday" : key === dayKey(new Date(now + 864e5)) ? "tomorrow" : null;
    const tokens = {
      date_num: key,
      date: `${part({ month: "long" })} ${ordinal(day)}, ${part({ year: "numeric" })}`,
      date_short: `${part({ month: "short" })} ${day}, ${part({ year: "numeric" })}`,
      date_long: `${part({ weekday: "long" })}, ${part({ month: "long" })} ${ordinal(day)}, ${part({ year: "numeric" })}`,
      time: part({ hour: "numeric", minute: "2-digit" }),
      time_secs: part({ hour: "numeric", minute: "2-digit", second: "2-digit" }),
      ago: ago(now - date.getTime()),
    };
    tokens.date_pretty = relative || tokens.date;
    tokens.date_short_pretty = relative || tokens.date_short;
    tokens.date_long_pretty = relative || tokens.date_long;
    return format.replace(/\{(\w+)\}/g, (match, name) => (name in tokens ? tokens[name] : match));
  }

  function ago(ms) {
    const minutes = Math.round(Math.abs(ms) / 60000);
    const [n, unit] = minutes < 60 ? [minutes, "minute"] : minutes < 1440 ? [Math.round(minutes / 60), "hour"] : [Math.round(minutes / 1440), "day"];
    const phrase = `${n} ${unit}${n === 1 ? "" : "s"}`;
    return ms >= 0 ? `${phrase} ago` : `in ${phrase}`;
  }

  function dateNode(seconds, format, fallback, url) {
    const shown = Number.isFinite(seconds) ? slackDate(seconds, format || "{date_short} {time}") : fallback || "";
    const node = el("span", { class: "date", title: `${fallback || ""} (shown in ${zone()})`.trim() }, shown);
    return url && safeUrl(url) ? el("a", { href: safeUrl(url), target: "_blank", rel: "noopener noreferrer" }, node) : node;
  }

  function mention(text, mine) {
    return el("span", { class: "mention" + (mine ? " mention-me" : "") }, text);
  }

  function channelLink(id, label) {
    const known = channelById(id);
    const name = known ? known.name : label || id;
    return el("a", { class: "channel-link", href: "#", onclick: (event) => { event.preventDefault(); if (known) go(id); } }, "#" + name);
  }

  // ------------------------------------------------------------------ mrkdwn

  /** ``<...>`` of mrkdwn: a mention, a channel, a special mention, a date or a link. */
  function angle(inner) {
    const bar = inner.indexOf("|");
    const target = bar < 0 ? inner : inner.slice(0, bar);
    const label = bar < 0 ? null : unescapeEntities(inner.slice(bar + 1));
    if (target.startsWith("@")) {
      const id = target.slice(1);
      const known = people().some((p) => p.id === id);
      return mention("@" + (known ? userName(id) : label || id), id === (S.data && S.data.me));
    }
    if (target.startsWith("#")) return channelLink(target.slice(1), label);
    if (target.startsWith("!subteam^")) {
      const group = ((S.data && S.data.user_groups) || []).find((g) => g.id === target.slice(9));
      return mention(label || "@" + (group ? group.handle : target.slice(9)));
    }
    if (target.startsWith("!date^")) {
      const [, seconds, format, url] = target.split("^");
      return dateNode(Number(seconds), format, label, url);
    }
    if (target.startsWith("!")) {
      const word = target.slice(1);
      return ["here", "channel", "everyone"].includes(word) ? mention("@" + word) : document.createTextNode(label || word);
    }
    const url = unescapeEntities(target);
    return link(url, label);
  }

  function textWithAtoms(text, atoms) {
    const nodes = [];
    let plain = "";
    for (const char of text) {
      const code = char.codePointAt(0);
      if (code >= ATOM_BASE && code < ATOM_BASE + atoms.length) {
        if (plain) nodes.push(document.createTextNode(unescapeEntities(plain)));
        plain = "";
        nodes.push(atoms[code - ATOM_BASE]);
      } else {
        plain += char;
      }
    }
    if (plain) nodes.push(document.createTextNode(unescapeEntities(plain)));
    return nodes;
  }

  function styled(text, atoms, depth) {
    const nodes = [];
    let rest = text;
    while (rest) {
      const match = depth < 4 ? FORMAT.exec(rest) : null;
      if (!match) {
        nodes.push(...textWithAtoms(rest, atoms));
        break;
      }
      const start = match.index + match[1].length;
      nodes.push(...textWithAtoms(rest.slice(0, start), atoms));
      nodes.push(el(STYLE_TAGS[match[2]], null, styled(match[3], atoms, depth + 1)));
      rest = rest.slice(match.index + match[0].length);
    }
    return nodes;
  }

  /** One run of mrkdwn (no code blocks, no quotes) as nodes: code spans, links, mentions, emoji, styles. */
  function inline(text, { plainCode = false } = {}) {
    const atoms = [];
    const source = text.replace(/[\ue000-\uf8ff]/g, "\ufffd");
    const marked = source.replace(/`([^`\n]+)`|<([^<>\n]+)>|:([a-z0-9_+-]+):/g, (match, code, inner, emoji) => {
      if (code !== undefined) {
        if (plainCode) return match;
        atoms.push(el("code", { class: "inline-code" }, unescapeEntities(code)));
      } else if (inner !== undefined) {
        atoms.push(angle(inner));
      } else {
        if (!EMOJI[emoji]) return match;
        atoms.push(el("span", { class: "emoji", title: `:${emoji}:` }, EMOJI[emoji]));
      }
      return String.fromCharCode(ATOM_BASE + atoms.length - 1);
    });
    return plainCode ? textWithAtoms(marked, atoms) : styled(marked, atoms, 0);
  }

  /** A mrkdwn string as a node: code blocks, block quotes, then :func:`inline` (white space kept). */
  function mrkdwn(text) {
    const box = el("div", { class: "mrkdwn" });
    const parts = String(text || "").split("```");
    if (parts.length % 2 === 0) parts.splice(parts.length - 2, 2, parts[parts.length - 2] + "```" + parts[parts.length - 1]);
    parts.forEach((part, index) => {
      if (index % 2 === 1) {
        box.append(el("pre", { class: "code-block" }, inline(part.replace(/^\n/, "").replace(/\n$/, ""), { plainCode: true })));
        return;
      }
      let chunk = part;
      if (index > 0) chunk = chunk.replace(/^\n/, "");
      if (index < parts.length - 1) chunk = chunk.replace(/\n$/, "");
      if (!chunk) return;
      let run = [];
      let quoting = false;
      const flush = () => {
        if (!run.length) return;
        const joined = run.join("\n");
        box.append(quoting ? el("blockquote", null, inline(joined)) : el("span", null, inline(joined)));
        run = [];
      };
      for (const line of chunk.split("\n")) {
        const quote = /^(&gt;|>)\s?/.exec(line);
        if (Boolean(quote) !== quoting) {
          flush();
          quoting = Boolean(quote);
        }
        run.push(quote ? line.slice(quote[0].length) : line);
      }
      flush();
    });
    return box;
  }

  function textObject(object) {
    if (!object) return null;
    if (object.type === "mrkdwn") return mrkdwn(object.text);
    return el("span", { class: "plain" }, object.emoji === false ? object.text : emojiText(object.text || ""));
  }

  function plainText(object) {
    if (!object) return "";
    return typeof object === "string" ? object : object.emoji === false ? object.text : emojiText(object.text || "");
  }

  // ------------------------------------------------------------------ Block Kit

  function blocks(list, surface) {
    const box = el("div", { class: "blocks" });
    for (const block of list || []) box.append(renderBlock(block, surface));
    return box;
  }

  function renderBlock(block, surface) {
    switch (block.type) {
      case "header":
        return el("div", { class: "b-header" }, plainText(block.text));
      case "section": {
        const main = el("div", { class: "b-section-main" }, textObject(block.text));
        if (block.fields) main.append(el("div", { class: "b-fields" }, block.fields.map((field) => el("div", { class: "b-field" }, textObject(field)))));
        const accessory = block.accessory ? el("div", { class: "b-accessory" }, element(block.accessory, block, surface)) : null;
        return el("div", { class: "b-section" }, main, accessory);
      }
      case "context_actions":
        return el("div", { class: "b-actions b-context-actions" }, (block.elements || []).map((item) => element(item, block, surface)));
      case "context":
        return el(
          "div",
          { class: "b-context" },
          (block.elements || []).map((item) =>
            item.type === "image" ? el("img", { class: "context-image", src: imageSource(item), alt: item.alt_text || "" }) : el("span", { class: "b-context-item" }, textObject(item)),
          ),
        );
      case "divider":
        return el("hr", { class: "b-divider" });
      case "actions":
        return el("div", { class: "b-actions" }, (block.elements || []).map((item) => element(item, block, surface)));
      case "image":
        return el(
          "figure",
          { class: "b-image" },
          block.title ? el("figcaption", null, plainText(block.title)) : null,
          el("img", { src: imageSource(block), alt: block.alt_text || "" }),
        );
      case "rich_text":
        return richText(block);
      case "input":
        return inputBlock(block, surface);
      case "table":
        return table(block);
      case "markdown":
        return el("div", { class: "b-markdown" }, mrkdwn(block.text || ""));
      default:
        return el("div", { class: "b-unsupported" }, `[${block.type} block]`);
    }
  }

  function table(block) {
    const rows = block.rows || [];
    const cell = (value) => (value && value.type === "rich_text" ? richText(value) : value && value.text !== undefined ? String(value.text) : "");
    return el(
      "table",
      { class: "b-table" },
      rows.map((row, index) => el("tr", null, row.map((value) => el(index === 0 ? "th" : "td", null, cell(value))))),
    );
  }

  function richText(block) {
    const box = el("div", { class: "b-rich" });
    for (const item of block.elements || []) {
      if (item.type === "rich_text_section") box.append(el("div", { class: "rt-section" }, richInline(item.elements)));
      else if (item.type === "rich_text_list") {
        const list = el(item.style === "ordered" ? "ol" : "ul", { class: `rt-list rt-indent-${item.indent || 0}`, start: item.offset ? item.offset + 1 : null });
        for (const entry of item.elements || []) list.append(el("li", null, richInline(entry.elements)));
        box.append(list);
      } else if (item.type === "rich_text_preformatted") box.append(el("pre", { class: "code-block" }, richInline(item.elements)));
      else if (item.type === "rich_text_quote") box.append(el("blockquote", null, richInline(item.elements)));
    }
    return box;
  }

  function richInline(elements) {
    return (elements || []).map((item) => {
      let node;
      switch (item.type) {
        case "text":
          node = document.createTextNode(item.text || "");
          break;
        case "link":
          node = link(item.url || "", item.text || item.url);
          break;
        case "user":
          node = mention("@" + userName(item.user_id), item.user_id === S.data.me);
          break;
        case "usergroup": {
          const group = (S.data.user_groups || []).find((g) => g.id === item.usergroup_id);
          node = mention("@" + (group ? group.handle : item.usergroup_id));
          break;
        }
        case "channel":
          node = channelLink(item.channel_id);
          break;
        case "emoji":
          node = el("span", { class: "emoji" }, item.unicode ? String.fromCodePoint(...item.unicode.split("-").map((hex) => parseInt(hex, 16))) : EMOJI[item.name] || `:${item.name}:`);
          break;
        case "broadcast":
          node = mention("@" + item.range);
          break;
        case "date":
          node = dateNode(item.timestamp, item.format, item.fallback, item.url);
          break;
        default:
          node = document.createTextNode(item.text || item.value || "");
      }
      const style = item.style || {};
      if (style.code) node = el("code", { class: "inline-code" }, node);
      if (style.bold) node = el("b", null, node);
      if (style.italic) node = el("i", null, node);
      if (style.strike) node = el("s", null, node);
      return node;
    });
  }

  function optionLabel(option) {
    return plainText(option && option.text);
  }

  function allOptions(item) {
    if (item.option_groups) return item.option_groups.flatMap((group) => group.options || []);
    return item.options || [];
  }

  /** An interactive element in a message, the Home tab or a modal (where inputs are form controls). */
  // An image's address: its image_url, or a slack_file by id (served by the emulator: /console/files/<id>) or by url.
function imageSource(item) {
  if (item.image_url) return item.image_url;
  const file = item.slack_file || {};
  if (file.id) return "/console/files/" + encodeURIComponent(file.id);
  return file.url || "";
}

function element(item, block, surface) {
    const act = (fields) => interact(surface, { action_id: item.action_id, block_id: block.block_id, ...fields });
    switch (item.type) {
      case "button": {
        const button = el("button", { type: "button", class: "btn" + (item.style ? ` btn-${item.style}` : ""), dataset: { actionId: item.action_id || "" } }, plainText(item.text));
        button.addEventListener("click", () => {
          if (item.url && safeUrl(item.url)) window.open(safeUrl(item.url), "_blank", "noopener");
          confirmThen(item.confirm, () => act({ value: item.value }), button);
        });
        return button;
      }
      case "feedback_buttons": {
        const pair = el("span", { class: "feedback-buttons" });
        for (const [side, mark] of [["positive_button", "👍"], ["negative_button", "👎"]]) {
          const choice = item[side];
          if (!choice) continue;
          const button = el("button", { type: "button", class: "btn btn-feedback", title: plainText(choice.text), "aria-label": plainText(choice.text), dataset: { actionId: item.action_id || "", value: choice.value } }, mark);
          button.addEventListener("click", () => act({ value: choice.value }));
          pair.append(button);
        }
        return pair;
      }
      case "overflow": {
        const button = el("button", { type: "button", class: "btn btn-overflow", "aria-label": "More actions", dataset: { actionId: item.action_id || "" } }, "⋯");
        button.addEventListener("click", (event) => {
          event.stopPropagation();
          openMenu(button, item.options || [], (option) => {
            if (option.url && safeUrl(option.url)) window.open(safeUrl(option.url), "_blank", "noopener");
            confirmThen(item.confirm, () => act({ selected_option: option, value: option.value }), button);
          });
        });
        return button;
      }
      case "static_select":
      case "external_select":
      case "users_select":
      case "conversations_select":
      case "channels_select":
      case "multi_static_select": {
        const select = selectElement(item);
        select.addEventListener("change", () => {
          const chosen = selectedOption(item, select);
          if (chosen) confirmThen(item.confirm, () => act({ selected_option: chosen, value: chosen.value }), select);
        });
        return select;
      }
      case "datepicker": {
        const input = el("input", { type: "date", class: "input", value: item.initial_date || null });
        input.addEventListener("change", () => act({ value: input.value }));
        return input;
      }
      case "image":
        return el("img", { class: "accessory-image", src: imageSource(item), alt: item.alt_text || "" });
      default:
        return el("span", { class: "b-unsupported" }, `[${item.type}]`);
    }
  }

  function choiceList(item) {
    if (item.type === "users_select") return people().filter((p) => !p.is_bot).map((p) => ({ text: { type: "plain_text", text: p.name }, value: p.id }));
    if (item.type === "conversations_select" || item.type === "channels_select")
      return (S.data.channels || []).map((c) => ({ text: { type: "plain_text", text: "#" + c.name }, value: c.id }));
    return allOptions(item);
  }

  function selectElement(item) {
    const select = el("select", { class: "select", dataset: { actionId: item.action_id || "" }, "aria-label": plainText(item.placeholder) || "Choose" });
    const initial = item.initial_option ? item.initial_option.value : item.initial_user || item.initial_conversation || item.initial_channel || null;
    select.append(el("option", { value: "", disabled: true, selected: initial === null }, plainText(item.placeholder) || "Select an item"));
    const add = (parent, option) => parent.append(el("option", { value: option.value, selected: option.value === initial }, optionLabel(option)));
    if (item.option_groups) {
      for (const group of item.option_groups) {
        const optgroup = el("optgroup", { label: plainText(group.label) });
        for (const option of group.options || []) add(optgroup, option);
        select.append(optgroup);
      }
    } else {
      for (const option of choiceList(item)) add(select, option);
    }
    return select;
  }

  function selectedOption(item, select) {
    return choiceList(item).find((option) => option.value === select.value) || null;
  }

  // ------------------------------------------------------------------ menus and confirmation

  function closeMenu() {
    $("menu-root").replaceChildren();
  }

  function openMenu(anchor, options, choose) {
    closeMenu();
    const rect = anchor.getBoundingClientRect();
    const menu = el(
      "div",
      { class: "menu", role: "menu", style: `top:${Math.round(rect.bottom + 4)}px;left:${Math.round(Math.max(8, rect.right - 220))}px` },
      options.map((option) =>
        el("button", { type: "button", class: "menu-item", role: "menuitem", onclick: () => { closeMenu(); choose(option); } }, optionLabel(option)),
      ),
    );
    $("menu-root").append(menu);
  }

  /** Slack's confirmation dialog of an element (``confirm``), then ``go`` when the person confirms. */
  function confirmThen(confirm, proceed, anchor) {
    if (!confirm) return proceed();
    const layer = el("div", { class: "overlay confirm-overlay" });
    const done = (yes) => {
      layer.remove();
      if (yes) proceed();
      else if (anchor && anchor.tagName === "SELECT") anchor.selectedIndex = 0;
    };
    layer.append(
      el(
        "div",
        { class: "dialog", role: "alertdialog", "aria-modal": "true" },
        el("div", { class: "dialog-title" }, plainText(confirm.title) || "Are you sure?"),
        el("div", { class: "dialog-text" }, textObject(confirm.text)),
        el(
          "div",
          { class: "dialog-buttons" },
          el("button", { type: "button", class: "btn", onclick: () => done(false) }, plainText(confirm.deny) || "Cancel"),
          el("button", { type: "button", class: "btn " + (confirm.style === "danger" ? "btn-danger" : "btn-primary"), onclick: () => done(true) }, plainText(confirm.confirm) || "Yes"),
        ),
      ),
    );
    document.body.append(layer);
    return undefined;
  }

  // ------------------------------------------------------------------ modals

  let modalInputs = [];

  function inputBlock(block, surface) {
    const item = block.element || {};
    const id = `input-${block.block_id}-${item.action_id}`;
    let control;
    let read;
    switch (item.type) {
      case "plain_text_input":
      case "email_text_input":
      case "url_text_input":
      case "number_input": {
        const attrs = { id, class: "input", name: block.block_id, placeholder: plainText(item.placeholder) || null, maxlength: item.max_length || null };
        control = item.multiline ? el("textarea", { ...attrs, rows: 4 }) : el("input", { ...attrs, type: item.type === "email_text_input" ? "email" : item.type === "number_input" ? "number" : "text" });
        control.value = item.initial_value || "";
        read = () => ({ type: item.type, value: control.value.trim() ? control.value : null });
        break;
      }
      case "radio_buttons":
      case "checkboxes": {
        const kind = item.type === "radio_buttons" ? "radio" : "checkbox";
        const initial = item.type === "radio_buttons" ? [item.initial_option].filter(Boolean) : item.initial_options || [];
        const boxes = (item.options || []).map((option) => {
          const box = el("input", { type: kind, name: id, value: option.value, checked: initial.some((o) => o.value === option.value) });
          return { option, box, row: el("label", { class: "choice" }, box, textObject(option.text)) };
        });
        control = el("div", { id, class: "choices" }, boxes.map((b) => b.row));
        read = () => {
          const chosen = boxes.filter((b) => b.box.checked).map((b) => b.option);
          return kind === "radio" ? { type: item.type, selected_option: chosen[0] || null } : { type: item.type, selected_options: chosen };
        };
        break;
      }
      case "datepicker":
        control = el("input", { id, type: "date", class: "input", value: item.initial_date || null });
        read = () => ({ type: item.type, selected_date: control.value || null });
        break;
      case "timepicker":
        control = el("input", { id, type: "time", class: "input", value: item.initial_time || null });
        read = () => ({ type: item.type, selected_time: control.value || null });
        break;
      default: {
        control = selectElement(item);
        control.id = id;
        const key = { users_select: "selected_user", conversations_select: "selected_conversation", channels_select: "selected_channel" }[item.type];
        read = () => {
          const chosen = selectedOption(item, control);
          if (key) return { type: item.type, [key]: chosen ? chosen.value : null };
          return { type: item.type, selected_option: chosen ? { text: chosen.text, value: chosen.value } : null };
        };
      }
    }
    const error = el("div", { class: "input-error", role: "alert", hidden: true });
    const field = el(
      "div",
      { class: "b-input", dataset: { blockId: block.block_id || "" } },
      el("label", { class: "input-label", for: id }, plainText(block.label), block.optional ? el("span", { class: "optional" }, " (optional)") : null),
      control,
      block.hint ? el("div", { class: "input-hint" }, plainText(block.hint)) : null,
      error,
    );
    if (surface.kind === "modal") {
      const filled = (state) => Object.entries(state).some(([name, value]) => name !== "type" && value !== null && !(Array.isArray(value) && value.length === 0));
      modalInputs.push({ block, item, read, error, filled });
    }
    return field;
  }

  function renderModal(modal) {
    const key = modal ? `${modal.view_id}/${modal.hash}` : null;
    if (key === S.modalKey) return;
    S.modalKey = key;
    const root = $("modal-root");
    root.replaceChildren();
    modalInputs = [];
    $("app").inert = Boolean(modal); // as in Slack, the page behind a form takes no clicks
    if (!modal) return;
    const view = modal.view;
    const title = plainText(view.title);
    const body = blocks(view.blocks, { kind: "modal", view_id: modal.view_id });
    const submit = view.submit ? el("button", { type: "submit", class: "btn btn-primary" }, plainText(view.submit)) : null;
    const form = el(
      "form",
      { class: "modal", role: "dialog", "aria-modal": "true", "aria-label": title, novalidate: true },
      el("header", { class: "modal-header" }, el("div", { class: "modal-title" }, title), el("button", { type: "button", class: "icon-button", "aria-label": "Close", onclick: () => closeModal(modal) }, "✕")),
      el("div", { class: "modal-body" }, body),
      el("footer", { class: "modal-footer" }, el("button", { type: "button", class: "btn", onclick: () => closeModal(modal) }, plainText(view.close) || "Cancel"), submit),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      submitModal(modal, submit);
    });
    root.append(el("div", { class: "overlay" }, form));
    const first = form.querySelector("input, textarea, select");
    if (first) first.focus();
  }

  async function submitModal(modal, submit) {
    const values = {};
    let missing = false;
    for (const entry of modalInputs) {
      const state = entry.read();
      entry.error.hidden = true;
      if (!entry.block.optional && !entry.filled(state)) {
        entry.error.textContent = REQUIRED;
        entry.error.hidden = false;
        missing = true;
      }
      (values[entry.block.block_id] = values[entry.block.block_id] || {})[entry.item.action_id] = state;
    }
    if (missing) return;
    if (submit) submit.disabled = true;
    const answer = await post("/console/api/submit", { view_id: modal.view_id, values });
    if (submit) submit.disabled = false;
    if (answer.errors) {
      for (const entry of modalInputs) {
        const message = answer.errors[entry.block.block_id];
        if (message) {
          entry.error.textContent = message;
          entry.error.hidden = false;
        }
      }
    }
  }

  async function closeModal(modal) {
    await post("/console/api/close", { view_id: modal.view_id });
  }

  // ------------------------------------------------------------------ messages

  const PALETTE = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b", "#975a16"];

  function avatar(userId) {
    if (isBot(userId)) return el("div", { class: "avatar avatar-app", "aria-hidden": "true" }, "A");
    const name = userName(userId) || "?";
    let hash = 0;
    for (const char of String(userId)) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
    return el("div", { class: "avatar", style: `background:${PALETTE[hash % PALETTE.length]}`, "aria-hidden": "true" }, name.charAt(0).toUpperCase());
  }

  function attachment(item) {
    const body = el(
      "div",
      { class: "attachment-body" },
      item.pretext ? mrkdwn(item.pretext) : null,
      item.title ? el("div", { class: "attachment-title" }, item.title_link ? link(item.title_link, item.title) : item.title) : null,
      item.blocks ? blocks(item.blocks, { kind: "attachment" }) : mrkdwn(item.text || item.fallback || ""),
      item.fields ? el("div", { class: "b-fields" }, item.fields.map((f) => el("div", { class: "b-field" }, el("b", null, f.title || ""), mrkdwn(f.value || "")))) : null,
      item.footer ? el("div", { class: "b-context" }, mrkdwn(item.footer)) : null,
    );
    const color = /^#?[0-9a-f]{3,8}$/i.test(item.color || "") ? (item.color.startsWith("#") ? item.color : "#" + item.color) : { good: "#2eb67d", warning: "#ecb22e", danger: "#e01e5a" }[item.color] || "#dddddd";
    return el("div", { class: "attachment", style: `border-left-color:${color}` }, body);
  }

  function file(item) {
    if ((item.mimetype || "").startsWith("image/")) {
      return el(
        "figure",
        { class: "file-image" },
        el("figcaption", null, item.title),
        el("a", { href: item.url, target: "_blank", rel: "noopener" }, el("img", { src: item.url, alt: item.title })),
      );
    }
    return el("a", { class: "file-card", href: item.url, target: "_blank", rel: "noopener" }, el("span", { class: "file-icon" }, "📄"), el("span", null, item.title));
  }

  function reactions(message) {
    if (!message.reactions || !message.reactions.length) return null;
    return el(
      "div",
      { class: "reactions" },
      message.reactions.map((r) =>
        el(
          "span",
          { class: "reaction" + (r.users.includes(S.data.me) ? " reaction-mine" : ""), title: `${r.users.map(userName).join(", ")} reacted with :${r.name}:`, dataset: { name: r.name } },
          el("span", { class: "emoji" }, EMOJI[r.name] || `:${r.name}:`),
          el("span", { class: "reaction-count" }, String(r.users.length)),
        ),
      ),
    );
  }

  const TASK_MARK = { pending: "○", in_progress: "◐", complete: "✓", error: "✗" };

  /** A streamed message (chat.startStream): its plan, text, task timeline with each task's state, closing blocks. */
  function streamNode(stream, surface) {
    const box = el("div", { class: "stream stream-" + stream.state, dataset: { state: stream.state } });
    if (stream.plan) box.append(el("div", { class: "stream-plan" }, stream.plan));
    const tasks = new Map();
    for (const chunk of stream.chunks) {
      if (chunk.type === "markdown_text") box.append(el("div", { class: "stream-text" }, mrkdwn(chunk.text)));
      else if (chunk.type === "task_update") {
        let node = tasks.get(chunk.id);
        if (!node) {
          node = el("div", { class: "stream-task" });
          tasks.set(chunk.id, node);
          box.append(node);
        }
        node.dataset.status = chunk.status;
        node.replaceChildren(
          el("span", { class: "task-mark task-" + chunk.status, title: chunk.status }, TASK_MARK[chunk.status] || "•"),
          el("span", { class: "task-title" }, mrkdwn(chunk.title)),
          chunk.output ? el("pre", { class: "task-output" }, chunk.output) : null,
        );
      } else if (chunk.type === "blocks") box.append(blocks(chunk.blocks, surface));
    }
    if (stream.state === "streaming") box.append(el("span", { class: "stream-cursor", "aria-label": "still writing" }, "▍"));
    if (stream.closing_blocks) box.append(blocks(stream.closing_blocks, surface));
    return box;
  }

  function messageNode(message, where) {
    const surface = { kind: "message", channel: where.channel, ts: message.ts, ephemeral: message.ephemeral };
    const author = userName(message.user);
    const meta = el(
      "div",
      { class: "meta" },
      el("span", { class: "author" }, author),
      isBot(message.user) ? el("span", { class: "badge" }, "APP") : null,
      el("time", { class: "time", datetime: tsDate(message.ts).toISOString(), title: tsDate(message.ts).toString() }, clock(tsDate(message.place || message.ts))),
      message.edited ? el("span", { class: "edited" }, "(edited)") : null,
    );
    let content;
    if (message.deleted) content = el("div", { class: "deleted" }, "This message was deleted.");
    else if (message.stream) content = streamNode(message.stream, surface);
    else if (message.blocks && message.blocks.length) content = blocks(message.blocks, surface);
    else content = mrkdwn(message.text || "");
    const node = el(
      "div",
      { class: "message" + (message.ephemeral ? " ephemeral" : ""), dataset: { ts: message.ts, user: message.user || "" } },
      avatar(message.user),
      el(
        "div",
        { class: "message-body" },
        message.ephemeral ? el("div", { class: "only-you" }, el("span", { class: "eye", "aria-hidden": "true" }, "👁"), " Only visible to you") : null,
        meta,
        content,
        (message.attachments || []).map(attachment),
        (message.files || []).map(file),
        reactions(message),
        !where.inThread && message.reply_count
          ? el(
              "button",
              { type: "button", class: "thread-summary", onclick: () => openThread(message.ts) },
              el("span", { class: "reply-avatars" }, (message.reply_users || []).slice(0, 4).map(avatar)),
              el("span", { class: "reply-count" }, `${message.reply_count} ${message.reply_count === 1 ? "reply" : "replies"}`),
              el("span", { class: "reply-last" }, `Last reply ${clock(tsDate(message.latest_reply))}`),
            )
          : null,
      ),
    );
    if (!message.ephemeral && !message.deleted) {
      node.append(
        el(
          "div",
          { class: "hover-actions" },
          where.inThread ? null : el("button", { type: "button", class: "btn btn-small", onclick: () => openThread(message.ts) }, "Reply in thread"),
          shortcutMenu(message, where),
        ),
      );
    }
    return node;
  }

  /** The message's "More actions" menu: the app's message shortcuts ("Send to agent"), each a ``message_action``. */
  function shortcutMenu(message, where) {
    const shortcuts = (S.data && S.data.shortcuts) || [];
    if (!shortcuts.length) return null;
    const options = shortcuts.map((s) => ({ text: { type: "plain_text", text: s.name }, value: s.callback_id }));
    const pick = (option) => post("/console/api/shortcut", { channel: where.channel, ts: message.ts, callback_id: option.value });
    const button = el("button", { type: "button", class: "btn btn-small more-actions", title: "More actions", "aria-label": "More actions" }, "\u22ee");
    button.addEventListener("click", (event) => {
      event.stopPropagation(); // the page's click closes open menus
      openMenu(button, options, pick);
    });
    return button;
  }

  function timeline(container, messages, where) {
    const atBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 60;
    const previous = container.scrollTop;
    container.replaceChildren();
    let day = null;
    for (const message of messages) {
      const date = tsDate(message.place || message.ts);
      if (!where.inThread && dayKey(date) !== day) {
        day = dayKey(date);
        container.append(el("div", { class: "day-divider" }, el("span", null, dayLabel(date))));
      }
      container.append(messageNode(message, where));
      if (where.inThread && message.ts === where.parent && messages.length > 1) {
        container.append(el("div", { class: "thread-divider" }, el("span", null, `${messages.length - 1} ${messages.length === 2 ? "reply" : "replies"}`)));
      }
    }
    if (!messages.length) container.append(el("div", { class: "empty" }, where.empty || "No messages yet."));
    container.scrollTop = atBottom || where.fresh ? container.scrollHeight : previous;
  }

  // ------------------------------------------------------------------ the page

  function renderPeople() {
    const select = $("person");
    const wanted = people().filter((p) => !p.is_bot);
    if (select.options.length !== wanted.length) {
      select.replaceChildren(...wanted.map((p) => el("option", { value: p.id }, p.note ? `${p.name} (${p.note})` : p.name)));
    }
    select.value = S.data.me;
  }

  function navItem(label, id, options) {
    const active = S.view === id;
    const unread = options.latest && S.seen && (!S.seen[id] || parseFloat(options.latest) > parseFloat(S.seen[id])) && !active;
    return el(
      "a",
      { href: "#", class: "nav-item" + (active ? " active" : "") + (unread ? " unread" : "") + (options.muted ? " muted" : ""), dataset: { view: id }, onclick: (event) => { event.preventDefault(); go(id); } },
      el("span", { class: "nav-icon", "aria-hidden": "true" }, options.icon),
      el("span", { class: "nav-label" }, label),
      options.badge ? el("span", { class: "badge" }, options.badge) : null,
    );
  }

  function renderNav() {
    const data = S.data;
    $("workspace-name").textContent = data.workspace.name;
    const nav = $("nav");
    nav.replaceChildren();
    append(nav, [
      el("div", { class: "nav-section" }, "Channels"),
      data.channels.map((c) => navItem(c.name, c.id, { icon: c.is_private ? "🔒" : "#", latest: c.latest, muted: !c.app_is_member })),
      el("div", { class: "nav-section" }, "Direct messages"),
      data.dms.map((c) => navItem(c.name, c.id, { icon: "●", latest: c.latest, badge: "APP" })),
      el("div", { class: "nav-section" }, "Apps"),
      navItem(`${data.bot.name} · Home`, "home", { icon: "⌂" }),
    ]);
  }

  function renderMain() {
    const data = S.data;
    const header = $("main-header");
    const container = $("messages");
    const fresh = S.lastView !== S.view + "/" + data.me;
    S.lastView = S.view + "/" + data.me;
    const composer = $("composer");
    if (data.view && data.view.kind === "home") {
      header.replaceChildren(
        el("div", null, el("div", { class: "pane-title" }, data.bot.name), el("div", { class: "pane-sub" }, "App Home · what the app published for you with views.publish")),
        el("button", { type: "button", class: "btn btn-small", onclick: () => openHome() }, "Refresh"),
      );
      composer.hidden = true;
      container.replaceChildren(
        data.home ? el("div", { class: "home" }, blocks(data.home.view.blocks, { kind: "home" })) : el("div", { class: "empty" }, "Opening the Home tab…"),
      );
      if (fresh) container.scrollTop = 0;
      return;
    }
    composer.hidden = false;
    const channel = data.view.channel;
    const title = channel.is_im ? channel.name : "#" + channel.name;
    header.replaceChildren(
      el(
        "div",
        null,
        el("div", { class: "pane-title" }, channel.is_private && !channel.is_im ? "🔒 " + channel.name : title),
        el("div", { class: "pane-sub" }, channel.is_im ? "Your direct messages with the app" : channel.app_is_member ? `${data.bot.name} is in this channel` : `${data.bot.name} is not in this channel: it gets no events from it`),
      ),
    );
    $("composer-text").placeholder = `Message ${title}`;
    timeline(container, data.view.messages, { channel: channel.id, inThread: false, fresh, empty: "No messages yet. Type /agent help below." });
    if (S.seen) S.seen[channel.id] = channel.latest;
  }

  function renderThread() {
    const pane = $("thread");
    const thread = S.data.thread;
    if (!S.thread || !thread) {
      pane.hidden = true;
      return;
    }
    const wasHidden = pane.hidden;
    pane.hidden = false;
    const channel = channelById(thread.channel);
    $("thread-where").textContent = channel ? (channel.is_im ? channel.name : "#" + channel.name) : "";
    timeline($("thread-messages"), thread.messages, { channel: thread.channel, inThread: true, parent: thread.ts, fresh: wasHidden, empty: "This thread is gone." });
    // the thread's status line (assistant.threads.setStatus), under the thread
    let line = $("thread-status");
    if (!line) {
      line = el("div", { id: "thread-status", class: "thread-status", role: "status" });
      $("thread-messages").after(line);
    }
    const status = thread.status;
    line.hidden = !status;
    line.textContent = status ? `${S.data.bot.name} ${status.status}` + (status.loading_messages.length ? ` · ${status.loading_messages[0]}` : "") : "";
  }

  function render() {
    const data = S.data;
    if (!S.seen) S.seen = Object.fromEntries([...data.channels, ...data.dms].map((c) => [c.id, c.latest]));
    renderPeople();
    renderMain();
    renderNav();
    renderThread();
    renderModal(data.modal);
  }

  // ------------------------------------------------------------------ talking to the emulator

  function syncUrl() {
    const query = new URLSearchParams({ as: S.as });
    if (S.view) query.set("view", S.view);
    if (S.thread) query.set("thread", S.thread);
    history.replaceState(null, "", `?${query}`);
  }

  function notice(text, kind) {
    const box = $("notice");
    if (!text) {
      box.hidden = true;
      return;
    }
    box.textContent = text;
    box.className = "notice" + (kind ? ` notice-${kind}` : "");
    box.hidden = false;
    clearTimeout(S.noticeTimer);
    S.noticeTimer = setTimeout(() => (box.hidden = true), NOTICE_MS);
  }

  async function refresh(force) {
    if (S.fetching) {
      S.again = S.again || force;
      return;
    }
    S.fetching = true;
    const asked = { as: S.as, view: S.view, thread: S.thread };
    try {
      const query = new URLSearchParams({ as: S.as, view: S.view, thread: S.thread || "" });
      if (!force && S.version) query.set("since", S.version);
      let data;
      try {
        const response = await fetch(`/console/api/state?${query}`, { cache: "no-store" });
        data = await response.json();
      } catch (error) {
        document.body.classList.add("offline");
        notice("The emulator does not answer (was the demo stopped?).", "error");
        return;
      }
      document.body.classList.remove("offline");
      if (!data.ok) {
        notice(data.error, "error");
        return;
      }
      if (asked.as !== S.as || asked.view !== S.view || asked.thread !== S.thread) {
        S.again = true; // the person switched while this was on its way: ask again
        return;
      }
      if (data.unchanged) return;
      S.version = data.version;
      S.data = data;
      S.as = data.me;
      render();
      syncUrl();
    } finally {
      S.fetching = false;
      if (S.again) {
        S.again = false;
        refresh(true);
      }
    }
  }

  async function post(path, body) {
    document.body.classList.add("busy");
    let answer;
    try {
      const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ as: S.as, ...body }) });
      answer = await response.json().catch(() => ({ ok: false, error: `HTTP ${response.status}` }));
    } catch (error) {
      answer = { ok: false, error: "The emulator does not answer (was the demo stopped?)." };
    } finally {
      document.body.classList.remove("busy");
    }
    if (!answer.ok) notice(answer.error, "error");
    else if (answer.notice) notice(answer.notice, "warning");
    await refresh(true);
    return answer;
  }

  function interact(surface, action) {
    if (surface.kind === "home") return post("/console/api/click", { surface: "home", ...action });
    if (surface.kind === "message") return post("/console/api/click", { channel: surface.channel, ts: surface.ts, ephemeral: surface.ephemeral, ...action });
    notice("Buttons inside forms and attachments are not emulated.", "warning");
    return undefined;
  }

  function go(view) {
    if (view === S.view) return;
    S.view = view;
    S.thread = null;
    S.version = null;
    syncUrl();
    if (view === "home") openHome();
    else if (view === dmWithApp()) post("/console/api/home", { tab: "messages" }); // the app's Messages tab
    else refresh(true);
  }

  function dmWithApp() {
    const mine = ((S.data && S.data.dms) || [])[0];
    return mine ? mine.id : null;
  }

  function openHome() {
    return post("/console/api/home", {});
  }

  function openThread(ts) {
    S.thread = ts;
    S.version = null;
    syncUrl();
    refresh(true);
  }

  async function send(textarea, threadTs) {
    const text = textarea.value.trim();
    if (!text) return;
    textarea.value = "";
    const channel = threadTs ? S.data.thread.channel : S.view;
    const answer = await post("/console/api/send", { channel, text, thread_ts: threadTs || null });
    if (!answer.ok) textarea.value = text;
  }

  function composer(form, textarea, threadTs) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      send(textarea, threadTs());
    });
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        send(textarea, threadTs());
      }
    });
  }

  function start() {
    composer($("composer"), $("composer-text"), () => null);
    composer($("thread-composer"), $("thread-text"), () => S.thread);
    $("thread-close").addEventListener("click", () => {
      S.thread = null;
      S.version = null;
      syncUrl();
      refresh(true);
    });
    $("person").addEventListener("change", async (event) => {
      const person = event.target.value;
      const current = channelById(S.view);
      const onDm = Boolean(current && current.is_im); // a DM is one person's: open the new person's own
      const dm = onDm ? await ownDm(person) : null;
      S.as = person;
      if (onDm) {
        S.view = dm || "home";
        S.thread = null;
      }
      S.version = null;
      S.modalKey = null;
      S.seen = null;
      syncUrl();
      if (S.view === "home") openHome();
      else if (dm) post("/console/api/home", { tab: "messages" }); // the app's Messages tab
      else refresh(true);
    });
    document.addEventListener("click", (event) => {
      if (!event.target.closest(".menu")) closeMenu();
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape") closeMenu();
    });
    firstView().then(() => {
      if (S.view === "home") openHome();
      else refresh(true);
      setInterval(() => refresh(false), POLL_MS);
    });
  }

  /** The ID of ``person``'s own DM with the app (what the state lists for them), null when there is none. */
  async function ownDm(person) {
    const response = await fetch(`/console/api/state?${new URLSearchParams({ as: person })}`, { cache: "no-store" });
    const data = await response.json().catch(() => ({ ok: false }));
    return data.ok && data.dms.length ? data.dms[0].id : null;
  }

  /** Without ``view`` in the address: the first channel the app is in. */
  async function firstView() {
    if (S.view) return;
    const response = await fetch(`/console/api/state?${new URLSearchParams({ as: S.as })}`, { cache: "no-store" });
    const data = await response.json();
    if (!data.ok) {
      notice(data.error, "error");
      return;
    }
    S.as = data.me;
    const first = data.channels.find((c) => c.app_is_member) || data.channels[0];
    S.view = first ? first.id : "home";
  }

  start();
})();
