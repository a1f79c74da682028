package websim

import "strings"

// Topic is one of the fixed topics whose vocabularies page text is built from. Its
// String form is the topic's name as it appears in Truth.Topics.
type Topic uint8

// The topics of the synthetic web. Every page carries one or two of them.
const (
	TopicSports Topic = iota
	TopicFinance
	TopicTax
	TopicTechnology
	TopicHealth
	TopicTravel
	TopicFood
	TopicScience
	numTopics
)

var topicNames = [numTopics]string{"sports", "finance", "tax", "technology", "health", "travel", "food", "science"}

// String returns the topic's lower-case English name ("sports", "tax", …).
func (t Topic) String() string {
	if t < numTopics {
		return topicNames[t]
	}
	return "unknown"
}

// Topics returns every topic in declaration order. The caller owns the slice.
func Topics() []Topic {
	out := make([]Topic, numTopics)
	for i := range out {
		out[i] = Topic(i)
	}
	return out
}

// TopicWords returns the English and Chinese vocabularies of t (about 40 words each),
// useful to check topic classifiers against the ground truth. The caller must not modify
// the returned slices.
func TopicWords(t Topic) (english, chinese []string) {
	if t >= numTopics {
		return nil, nil
	}
	return vocabEN[t], vocabZH[t]
}

// StopWords returns the filler words mixed into every paragraph (English and Chinese);
// they carry no topic. The caller must not modify the returned slices.
func StopWords() (english, chinese []string) { return stopEN, stopZH }

var vocabEN = [numTopics][]string{
	TopicSports: strings.Fields(`football basketball tennis match league goal coach player stadium
		tournament championship referee scoreboard team season athlete marathon olympic cricket
		baseball hockey swimming cycling boxing golf racing sprint defender striker goalkeeper
		freekick transfer fixture victory defeat training fitness medal trophy playoff`),
	TopicFinance: strings.Fields(`stock bond market investor dividend equity portfolio bank
		interest inflation currency exchange fund asset liability credit loan mortgage hedge
		broker trading shares capital profit earnings valuation futures options yield liquidity
		deposit savings pension insurance merger acquisition bankruptcy treasury securities ipo`),
	TopicTax: strings.Fields(`taxpayer deduction refund audit taxation vat levy tariff exemption
		filing withholding bracket payroll customs excise receipt invoice declaration allowance
		threshold surcharge fiscal assessment accountant irs taxable rebate bookkeeping ledger
		compliance evasion avoidance relief stamp duty estate inheritance credits quarterly annual`),
	TopicTechnology: strings.Fields(`software hardware computer network internet server database
		algorithm processor smartphone cloud startup programming developer code compiler browser
		website encryption robot automation chip semiconductor laptop tablet wireless bandwidth
		gadget digital platform app interface kernel storage crawler protocol silicon circuit
		firmware virtual`),
	TopicHealth: strings.Fields(`doctor hospital patient medicine nurse vaccine disease therapy
		diet exercise wellness symptom diagnosis clinic surgery treatment prescription immune
		virus infection cardiology nutrition vitamin sleep stress mental physician pharmacy
		recovery injury pain allergy diabetes cholesterol blood pressure checkup epidemic
		pediatric dental`),
	TopicTravel: strings.Fields(`flight airport hotel passport visa luggage tourist destination
		itinerary beach island mountain cruise journey backpack resort booking ticket airline
		sightseeing museum landmark adventure guidebook hostel souvenir voyage excursion
		departure arrival border train railway map trek camping safari coast harbor vacation
		lodge`),
	TopicFood: strings.Fields(`recipe kitchen chef restaurant noodle rice dumpling soup bread
		cheese sauce spice flavor dessert cake chocolate coffee tea breakfast lunch dinner
		vegetable fruit meat seafood bakery grill roast menu cuisine ingredient taste sweet
		salty spicy delicious organic snack buffet oven`),
	TopicScience: strings.Fields(`physics chemistry biology experiment laboratory theory molecule
		atom energy gravity quantum evolution genome cell telescope galaxy planet astronomy
		research hypothesis scientist microscope particle electron neutron climate geology
		fossil ecology mathematics equation observation discovery journal element reaction
		spectrum orbit photon`),
}

var vocabZH = [numTopics][]string{
	TopicSports: strings.Fields(`足球 篮球 网球 比赛 联赛 进球 教练 球员 体育场 锦标赛 冠军 裁判
		比分 球队 赛季 运动员 马拉松 奥运会 棒球 冰球 游泳 自行车 拳击 高尔夫 赛车 短跑 后卫 前锋
		守门员 点球 转会 赛程 胜利 失利 训练 健身 奖牌 奖杯 决赛 体操`),
	TopicFinance: strings.Fields(`股票 债券 市场 投资者 股息 股权 投资组合 银行 利率 通货膨胀 货币
		汇率 基金 资产 负债 信贷 贷款 按揭 对冲 券商 交易 股份 资本 利润 盈利 估值 期货 期权 收益率
		流动性 存款 储蓄 养老金 保险 并购 收购 破产 国债 证券 上市`),
	TopicTax: strings.Fields(`纳税人 扣除 退税 审计 税收 增值税 征税 关税 免税 申报 代扣代缴 税率
		工资薪金 海关 消费税 收据 发票 纳税申报表 津贴 起征点 附加税 财政 评估 会计师 税务局 应税
		返还 记账 账簿 合规 逃税 避税 减免 印花税 遗产税 继承 抵免 季度 年度 个人所得税`),
	TopicTechnology: strings.Fields(`软件 硬件 计算机 网络 互联网 服务器 数据库 算法 处理器 智能手机
		云计算 创业公司 编程 开发者 代码 编译器 浏览器 网站 加密 机器人 自动化 芯片 半导体 笔记本
		平板电脑 无线 带宽 数码 平台 应用 接口 内核 存储 爬虫 协议 硅谷 电路 固件 虚拟 人工智能`),
	TopicHealth: strings.Fields(`医生 医院 病人 药品 护士 疫苗 疾病 治疗 饮食 运动 养生 症状 诊断
		诊所 手术 疗法 处方 免疫 病毒 感染 心脏病 营养 维生素 睡眠 压力 心理 医师 药房 康复 受伤
		疼痛 过敏 糖尿病 胆固醇 血压 体检 流行病 儿科 牙科 中医`),
	TopicTravel: strings.Fields(`航班 机场 酒店 护照 签证 行李 游客 目的地 行程 海滩 岛屿 山脉 邮轮
		旅程 背包 度假村 预订 机票 航空公司 观光 博物馆 地标 探险 旅游指南 青年旅舍 纪念品 航行
		短途旅行 出发 到达 边境 火车 铁路 地图 徒步 露营 野生动物 海岸 港口 假期`),
	TopicFood: strings.Fields(`食谱 厨房 厨师 餐厅 面条 米饭 饺子 汤 面包 奶酪 酱料 香料 风味 甜点
		蛋糕 巧克力 咖啡 茶 早餐 午餐 晚餐 蔬菜 水果 肉类 海鲜 面包店 烧烤 烤鸭 菜单 菜系 食材 口味
		甜味 咸味 麻辣 美味 有机 小吃 自助餐 烤箱`),
	TopicScience: strings.Fields(`物理 化学 生物 实验 实验室 理论 分子 原子 能量 引力 量子 进化 基因组
		细胞 望远镜 星系 行星 天文学 研究 假设 科学家 显微镜 粒子 电子 中子 气候 地质 化石 生态
		数学 方程 观测 发现 期刊 元素 反应 光谱 轨道 光子 宇宙`),
}

var stopEN = strings.Fields(`the a of and to in is for on with as by at from that this it was are be`)

var stopZH = strings.Fields(`的 了 是 在 和 有 也 就 都 而 及 与 着 或 一个 我们 他们 这个 那些 因为`)

// Phrases for the non-UTF-8 charset pages: every phrase is representable in its charset.
var (
	phrasesBig5 = strings.Fields(`體育 財經 稅務 科技 健康 旅遊 美食 科學 新聞 報導 網站 資料 學校
		電腦 經濟 醫院 銀行 飛機 火車 天氣 圖書館 大學 政府 市場`)
	phrasesSJIS = strings.Fields(`スポーツ 経済 税金 技術 健康 旅行 料理 科学 新聞 記事 情報 学校
		電車 天気 図書館 大学 政府 市場 東京 日本語 コンピュータ ネットワーク 病院 銀行`)
)
